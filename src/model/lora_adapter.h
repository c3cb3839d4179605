// A LoRA adapter in llama.cpp's GGUF format, bound to the model it adapts:
// general.type = "adapter", adapter.type = "lora", general.architecture the
// model's, adapter.lora.alpha (optional; 0 or absent: the scale is the
// user's alone), and per adapted tensor NAME of the model the pair
// NAME.lora_a (ne [n_in, r]) and NAME.lora_b (ne [r, n_out]) in f32, f16,
// bf16 or q8_0. llama.cpp's norm deltas (NAME ending in _norm.weight) are
// skipped as llama.cpp skips them. Adapted tensors are the projections every
// architecture multiplies through the backends' one product function:
// blk.N.attn_q/attn_k/attn_v/attn_qkv/attn_output/ffn_gate/ffn_up/ffn_down
// and output (not the token table, not experts: a clear ModelError).
// The adapter's file stays mapped; the backends read A and B from it
// (backend/lora.h applies them).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/lora.h"
#include "gguf/file.h"

namespace ferrite::model {

class Model;

class LoraAdapter {
 public:
  // Opens and validates an adapter for `model` (which must outlive it).
  // Throws IoError / FormatError, or ModelError naming the file and what
  // does not fit the model (architecture, tensor name, shape, type).
  static std::shared_ptr<const LoraAdapter> load(const std::string& path, const Model& model);
  // The same for an opened or parsed file (its bytes must outlive the adapter).
  static std::shared_ptr<const LoraAdapter> from_file(gguf::File file, const Model& model);

  const std::string& path() const { return file_->path(); }
  float alpha() const { return alpha_; }
  // The model it was bound to.
  const Model& model() const { return *model_; }
  const std::vector<backend::LoraWeight>& weights() const { return weights_; }

 private:
  LoraAdapter() = default;
  std::unique_ptr<gguf::File> file_;
  const Model* model_ = nullptr;
  float alpha_ = 0.0f;
  std::vector<backend::LoraWeight> weights_;
};

// Whether ferrite applies adapters to the model tensor `name` (the list above).
bool lora_adaptable(const std::string& name);

// The table a step's backends look the adapters' pairs up in: adapter i of
// `adapters` is LoraTerm::adapter i.
backend::LoraTable lora_table(const std::vector<std::shared_ptr<const LoraAdapter>>& adapters);

}  // namespace ferrite::model
