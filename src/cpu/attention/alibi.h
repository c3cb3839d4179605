// ALiBi (attention with linear biases, Press et al. 2021): keys carry no
// position; head h adds slope(h) times the query-key distance to its scores
// instead. As in llama.cpp, the KV mask of an ALiBi model carries the
// distance (KvView::mask: -|q_pos - k_pos| for a visible cell, -inf for a
// hidden one) and the attention adds slope(h) * mask, after the score scale
// and soft-cap. Without ALiBi (max_bias 0) the slope is 1 and the mask adds
// as it is (0 or -inf).
//
// The slopes (llama.cpp's, a fact of its ggml softmax with max_bias): with
// n2 the largest power of two <= n_head, m0 = 2^(-max_bias / n2) and
// m1 = 2^(-(max_bias / 2) / n2), head h < n2 has m0^(h + 1) and head
// h >= n2 has m1^(2 (h - n2) + 1) (the odd powers of the next power of two's
// geometric sequence, for head counts that are not powers of two).
//
// Shared by the CPU kernels and the CUDA kernels (cuda/kernels), host and device.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define FERRITE_ALIBI_HD __host__ __device__
#else
#define FERRITE_ALIBI_HD
#endif

namespace ferrite::cpu {

// The largest power of two <= n_head (n_head >= 1).
FERRITE_ALIBI_HD inline int64_t alibi_n2(int64_t n_head) {
  int64_t n2 = 1;
  while (n2 * 2 <= n_head) n2 *= 2;
  return n2;
}

// Head h's slope; 1 when max_bias is 0 (no ALiBi).
FERRITE_ALIBI_HD inline float alibi_slope(int64_t h, int64_t n_head, float max_bias) {
  if (max_bias <= 0.0f) return 1.0f;
  const int64_t n2 = alibi_n2(n_head);
  const float m0 = powf(2.0f, -max_bias / static_cast<float>(n2));
  const float m1 = powf(2.0f, -(max_bias / 2.0f) / static_cast<float>(n2));
  return h < n2 ? powf(m0, static_cast<float>(h + 1)) : powf(m1, static_cast<float>(2 * (h - n2) + 1));
}

}  // namespace ferrite::cpu
