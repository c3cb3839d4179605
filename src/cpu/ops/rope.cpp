#include "cpu/ops/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {

// The pair index at which the rotation of pair frequency crosses n_rot
// turns over the original context (YaRN's correction dimension).
float corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
  return static_cast<float>(n_dims) *
         std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * std::numbers::pi_v<float>)) /
         (2.0f * std::log(base));
}

float ramp(float low, float high, int i0) {
  const float y = (static_cast<float>(i0 / 2) - low) / std::max(0.001f, high - low);
  return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

}  // namespace

void rope_table(const RopeConfig& cfg, const int32_t* pos, int64_t n_pos, float* cos_out, float* sin_out) {
  const int half = cfg.n_rot / 2;
  const float theta_scale = std::pow(cfg.freq_base, -2.0f / static_cast<float>(cfg.n_rot));
  float corr_low = 0.0f, corr_high = 0.0f;
  if (cfg.ext_factor != 0.0f) {
    corr_low = corr_dim(cfg.n_rot, cfg.n_ctx_orig, cfg.beta_fast, cfg.freq_base);
    corr_high = corr_dim(cfg.n_rot, cfg.n_ctx_orig, cfg.beta_slow, cfg.freq_base);
    if (cfg.yarn_truncate) {
      corr_low = std::floor(corr_low);
      corr_high = std::ceil(corr_high);
    }
    corr_low = std::max(0.0f, corr_low);
    corr_high = std::min(static_cast<float>(cfg.n_rot - 1), corr_high);
  }
  for (int64_t t = 0; t < n_pos; ++t) {
    float theta_base = static_cast<float>(pos[t]);
    for (int i = 0; i < half; ++i) {
      const float ff = cfg.freq_factors != nullptr ? cfg.freq_factors[i] : 1.0f;
      const float theta_extrap = theta_base / ff;
      const float theta_interp = cfg.freq_scale * theta_extrap;
      float theta = theta_interp;
      float mscale = cfg.attn_factor;
      if (cfg.ext_factor != 0.0f) {
        const float mix = ramp(corr_low, corr_high, 2 * i) * cfg.ext_factor;
        theta = theta_interp * (1.0f - mix) + theta_extrap * mix;
        mscale *= 1.0f + 0.1f * std::log(1.0f / cfg.freq_scale);
      }
      cos_out[t * half + i] = std::cos(theta) * mscale;
      sin_out[t * half + i] = std::sin(theta) * mscale;
      theta_base *= theta_scale;
    }
  }
}

void rope_apply(const RopeConfig& cfg, const float* cos_t, const float* sin_t, float* x, int64_t n_tokens,
                int64_t n_heads, int64_t head_dim) {
  const int half = cfg.n_rot / 2;
  const VecOps& ops = vec_ops();
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* c = cos_t + t * half;
    const float* s = sin_t + t * half;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * head_dim;
      if (cfg.neox) {
        ops.rotate(v, v + half, c, s, half, 1);
      } else {
        ops.rotate(v, v + 1, c, s, half, 2);
      }
    }
  }
}

}  // namespace ferrite::cpu
