// What rwkv6 and rwkv7 share (arch_rwkv.cpp): binding a layer's time-mix and
// channel-mix tensors by llama.cpp's names into backend::RwkvWeights, and the
// slices of stacked tensors (time_mix_lerp_fused [n_embd, 1, 1, 5 or 6],
// rwkv6's time_mix_w2 [extra, n_embd, 5]) as weights of their own.
#pragma once

#include <cstdint>
#include <deque>

#include "backend/ops.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace ferrite::model {

using backend::RwkvSpec;
using backend::RwkvWeights;

// The TensorInfos of the slices a model binds (stable addresses).
class WeightSlices {
 public:
  // Slice j of t's outermost dimension (t [.., count]): the rows of one slice as a 2-D weight.
  Tensor slice(const Tensor& t, int64_t j, int64_t count);

 private:
  std::deque<gguf::TensorInfo> infos_;
};

// rwkv6's keys: time_mix_extra_dim, time_decay_extra_dim (required), rescale_every_n_layers (0 when absent).
struct Rwkv6Dims {
  int64_t mix_extra = 0, decay_extra = 0, rescale_every = 0;
};
Rwkv6Dims read_rwkv6_dims(const gguf::File& file, const HParams& hp);
RwkvWeights bind_rwkv6_layer(const WeightBinder& b, const HParams& hp, const Rwkv6Dims& d, int64_t il,
                             WeightSlices& slices);
// rwkv6qwen2's time mix: rwkv6's mixes and decay, no time_mix_first (gated
// linear attention instead), k and v of kv_heads heads with optional biases,
// no group norm; its feed-forward is the arch's (SwiGLU).
RwkvWeights bind_rwkv6qwen2_layer(const WeightBinder& b, const HParams& hp, const Rwkv6Dims& d, int64_t kv_heads,
                                  int64_t il, WeightSlices& slices);

// rwkv7's LoRA ranks: attention.decay_lora_rank, iclr_lora_rank,
// value_residual_mix_lora_rank (required), gate_lora_rank (0: no gate).
struct Rwkv7Dims {
  int64_t decay = 0, iclr = 0, value_mix = 0, gate = 0;
};
Rwkv7Dims read_rwkv7_dims(const gguf::File& file, const HParams& hp);
RwkvWeights bind_rwkv7_layer(const WeightBinder& b, const HParams& hp, const Rwkv7Dims& d, int64_t il,
                             WeightSlices& slices);

// kv_heads: rwkv6qwen2's (0: every head has its own k and v).
RwkvSpec rwkv_spec(const HParams& hp, int version, int64_t il, const RwkvWeights& w, int64_t kv_heads = 0);

}  // namespace ferrite::model
