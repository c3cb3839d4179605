// llama4's attention temperature tuning (its layers without RoPE): the
// queries of a token at position pos are scaled by
//   1 + scale * log(floor((pos + 1) / floor_scale) + 1),
// 1 for the first floor_scale - 1 positions, growing slowly after (f32, as
// llama.cpp's input scale). The reference and the only CPU form; the CUDA
// kernel (cuda/kernels/llama4_ops.h attn_temperature_scale) is tested
// against it (tests/cuda/llama4_ops_test.cpp).
#pragma once

#include <cmath>
#include <cstdint>

namespace ferrite::cpu {

inline float attn_temperature(int32_t pos, float floor_scale, float scale) {
  return std::log(std::floor((static_cast<float>(pos) + 1.0f) / floor_scale) + 1.0f) * scale + 1.0f;
}

// q [n, width]: row t *= attn_temperature(pos[t], floor_scale, scale).
inline void attn_temperature_scale(float* q, const int32_t* pos, int64_t n, int64_t width, float floor_scale,
                                   float scale) {
  for (int64_t t = 0; t < n; ++t) {
    const float f = attn_temperature(pos[t], floor_scale, scale);
    for (int64_t i = 0; i < width; ++i) q[t * width + i] *= f;
  }
}

// The experts' inputs weighted by their router weight (MoeWeights::weight_input):
// for slot i (a token's j-th chosen expert), row[i] of in [slots, n] *= w[i],
// then w[i] = 1 (what the combine then applies). The CUDA twin:
// cuda/kernels/llama4_ops.h moe_weight_inputs.
inline void moe_weight_inputs(float* in, const int32_t* row, float* w, int64_t slots, int64_t n) {
  for (int64_t i = 0; i < slots; ++i) {
    float* r = in + static_cast<int64_t>(row[i]) * n;
    for (int64_t d = 0; d < n; ++d) r[d] *= w[i];
    w[i] = 1.0f;
  }
}

}  // namespace ferrite::cpu
