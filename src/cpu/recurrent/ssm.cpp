#include "cpu/recurrent/ssm.h"

#include <algorithm>
#include <cmath>

namespace ferrite::cpu {
namespace {

float silu(float v) { return v / (1.0f + std::exp(-v)); }
float softplus(float v) { return v > 20.0f ? v : std::log1p(std::exp(v)); }

}  // namespace

void ssm_conv_token(float* state, const float* x, const float* w, const float* b, int64_t d_conv, int64_t ch,
                    float* out) {
  const int64_t k_last = d_conv - 1;
  for (int64_t c = 0; c < ch; ++c) {
    const float* wc = w + c * d_conv;
    float acc = b != nullptr ? b[c] : 0.0f;
    for (int64_t k = 0; k < k_last; ++k) acc += wc[k] * state[k * ch + c];
    acc += wc[k_last] * x[c];
    out[c] = silu(acc);
  }
  if (k_last > 0) {
    std::copy(state + ch, state + k_last * ch, state);
    std::copy(x, x + ch, state + (k_last - 1) * ch);
  }
}

void ssm_scan_token(const SsmScanArgs& a, float* state, const float* x, const float* dt, const float* B,
                    const float* C, float* y) {
  const int64_t heads_per_group = a.n_head / a.n_group;
  for (int64_t h = 0; h < a.n_head; ++h) {
    const int64_t g = h / heads_per_group;
    const float* Bg = B + g * a.d_state;
    const float* Cg = C + g * a.d_state;
    const float dth = softplus(dt[h] + a.dt_bias[h]);
    const float decay = std::exp(dth * a.a[h]);
    for (int64_t p = 0; p < a.head_dim; ++p) {
      const float xv = x[h * a.head_dim + p];
      const float dx = dth * xv;
      float* s = state + (h * a.head_dim + p) * a.d_state;
      float acc = 0.0f;
      for (int64_t n = 0; n < a.d_state; ++n) {
        s[n] = s[n] * decay + dx * Bg[n];
        acc += s[n] * Cg[n];
      }
      y[h * a.head_dim + p] = acc + a.d[h] * xv;
    }
  }
}

void ssm_gated_norm(float* y, const float* z, const float* w, int64_t d_inner, int64_t n_group, float eps) {
  const int64_t gs = d_inner / n_group;
  for (int64_t i = 0; i < d_inner; ++i) y[i] *= silu(z[i]);
  for (int64_t g = 0; g < n_group; ++g) {
    float* yg = y + g * gs;
    double ss = 0.0;
    for (int64_t i = 0; i < gs; ++i) ss += static_cast<double>(yg[i]) * yg[i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(gs)) + eps);
    for (int64_t i = 0; i < gs; ++i) yg[i] = yg[i] * inv * w[g * gs + i];
  }
}

}  // namespace ferrite::cpu
