// The rotary embedding each layer gives its keys, as the forward passes
// apply it: the model's RoPE settings, the frequency factors its file holds
// (Llama 3's rope_freqs, LongRoPE's short or long factors chosen by the
// cache size) and gemma3's own settings for its sliding-window layers. A
// context shift (runtime/kv_cache_shift.cpp) rotates cached keys again with
// the same settings.
#pragma once

#include <cstdint>

#include "backend/ops.h"
#include "model/hparams.h"

namespace ferrite::model {

class Model;

// gemma3: every sixth layer attends globally, the others within the window
// and with their own RoPE base, unscaled.
constexpr int64_t kGemma3SlidingPattern = 6;
constexpr float kGemma3LocalRopeBase = 10000.0f;

// smollm3: every fourth layer (il + 1 a multiple of 4) attends without RoPE
// (ik_llama.cpp fixes the step; no metadata key gives it).
constexpr int64_t kSmolLM3NoRopeStep = 4;

// llama4: every fourth layer attends without RoPE (llama.cpp's fixed
// n_no_rope_layer_step; no metadata key gives it).
constexpr int64_t kLlama4NoRopeStep = 4;

// The backends' RoPE settings of r with `freq_factors` ([n_rot/2] divisors or null).
backend::RopeConfig rope_config(const RopeParams& r, const float* freq_factors);

// gemma3's sliding-window layers: r with the local base, unscaled.
RopeParams gemma3_local_rope(const RopeParams& r);

// Layer `layer`'s rotation of its keys in a cache of n_cells cells (n_rot
// 0: the model has no rotary embedding). Throws ModelError for a factors
// tensor of the wrong type or shape.
backend::RopeConfig layer_rope(const Model& m, int64_t layer, int64_t n_cells);

}  // namespace ferrite::model
