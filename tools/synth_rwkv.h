// `ferrite synth`'s RWKV shapes (rwkv6, rwkv7): their tensors by llama.cpp's
// names and shapes and their metadata keys (model/arch_rwkv.cpp reads them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"

namespace ferrite::tools {

struct RwkvShape {
  const char* name;
  int version;  // 6 or 7
  int64_t n_embd, n_layer, n_ff, head_size;
  // rwkv6: time_mix_extra_dim, time_decay_extra_dim, rescale_every_n_layers, unused;
  // rwkv7: decay, iclr, value-residual and gate LoRA ranks.
  int64_t r1, r2, r3, r4;
};

// The preset named `name`, or null; `names` gets " name" per preset.
const RwkvShape* find_rwkv_shape(const std::string& name, std::string& names);
std::vector<gguf::TensorInfo> rwkv_tensors(const RwkvShape& s, int64_t n_vocab);
void set_rwkv_metadata(gguf::Writer& w, const RwkvShape& s);

}  // namespace ferrite::tools
