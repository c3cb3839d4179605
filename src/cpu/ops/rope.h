// Rotary position embedding. A position's rotation angles depend only on
// the position, so they are computed once per batch (rope_table) and applied
// to every head of every layer (rope_apply).
//
// Angle of pair i (0 <= i < n_rot/2) at position p:
//   theta = p * base^(-2i/n_rot) / freq_factor[i]   (computed as llama.cpp does:
//   theta_i = theta_{i-1} * base^(-2/n_rot) in float)
// then scaled: linear (theta * freq_scale) or YaRN (a ramp between the
// interpolated and extrapolated angle, magnitude scaled by mscale). YaRN's
// ramp runs between the correction dimensions of beta_fast and beta_slow,
// rounded out to whole pairs (floor, ceil) as llama.cpp does, or left
// fractional (yarn_truncate false: transformers' rope_scaling truncate
// false, gpt-oss's, as OpenAI's reference computes it); both clamped to
// [0, n_rot - 1].
// Normal mode rotates (x[2i], x[2i+1]); NeoX mode rotates (x[i], x[i + n_rot/2]).
// Dimensions >= n_rot pass through unchanged (partial rotary). The rotation
// itself uses fused multiply-adds (VecOps::rotate), as llama.cpp's does.
#pragma once

#include <cstdint>

namespace ferrite::cpu {

struct RopeConfig {
  int n_rot = 0;              // dimensions rotated (even, <= head_dim)
  bool neox = false;          // NeoX pairing
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;    // 1 / linear scaling factor
  float ext_factor = 0.0f;    // YaRN extrapolation mix (0: off)
  float attn_factor = 1.0f;   // magnitude scale
  float beta_fast = 32.0f;
  float beta_slow = 1.0f;
  int n_ctx_orig = 0;         // training context (YaRN)
  bool yarn_truncate = true;  // YaRN's correction range rounded to whole pairs (false: fractional)
  const float* freq_factors = nullptr;  // [n_rot/2] divisors (Llama 3, LongRoPE) or nullptr
};

// cos/sin of every pair for each position: [n_pos, n_rot/2] each.
void rope_table(const RopeConfig& cfg, const int32_t* pos, int64_t n_pos, float* cos_out, float* sin_out);

// Rotates x: [n_tokens, n_heads, head_dim] in place with the table of those tokens.
void rope_apply(const RopeConfig& cfg, const float* cos_t, const float* sin_t, float* x, int64_t n_tokens,
                int64_t n_heads, int64_t head_dim);

}  // namespace ferrite::cpu
