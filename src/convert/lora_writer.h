// Writing LoRA adapters in llama.cpp's GGUF format (model/lora_adapter.h
// reads them): general.type "adapter", general.architecture, adapter.type
// "lora", adapter.lora.alpha, and per adapted tensor NAME the pair
// NAME.lora_a (ne [n_in, r]) and NAME.lora_b (ne [r, n_out]). Used by
// `ferrite convert --lora` (a PEFT adapter, lora_peft.h), by
// `ferrite synth --lora` (a random adapter for a model, for comparisons)
// and by the tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/tensor_type.h"

namespace ferrite::convert {

struct LoraPair {
  std::string base;          // the model's tensor name, "blk.0.attn_q.weight"
  int64_t n_in = 0, n_out = 0, rank = 0;
  std::vector<float> a;      // [rank rows of n_in]
  std::vector<float> b;      // [n_out rows of rank]
};

struct LoraFile {
  std::string arch;          // general.architecture of the model it adapts
  float alpha = 0.0f;        // adapter.lora.alpha (0: none)
  std::string name;          // general.name (optional)
  std::vector<LoraPair> pairs;
};

// Writes `f` to `path` with its pairs in `type` (f32, f16, bf16; q8_0 where
// a row length is a multiple of 32, else f16). Throws InvalidArgument for
// inconsistent sizes, IoError on a write failure.
void write_lora(const LoraFile& f, const std::string& path, TensorType type = TensorType::F32);

// A random adapter of rank `rank` for the 2-D tensors of `model` named in
// `targets` (suffixes such as "attn_q.weight", or "output.weight"): A and B
// normal with standard deviation `stddev` (seeded), alpha `alpha`.
LoraFile random_lora(const gguf::File& model, const std::vector<std::string>& targets, int64_t rank, float alpha,
                     float stddev, uint32_t seed);

}  // namespace ferrite::convert
