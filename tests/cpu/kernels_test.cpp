// Norms, activations, softmax and RoPE against their definitions.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/ops/activations.h"
#include "cpu/ops/norm.h"
#include "cpu/ops/rope.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

TEST(Norm, RmsNormDefinition) {
  const int64_t rows = 3, n = 37;
  const auto x = test::random_floats(rows * n, 1, -3.0f, 3.0f);
  const auto w = test::random_floats(n, 2);
  std::vector<float> y(rows * n);
  rms_norm(x.data(), w.data(), 1e-5f, rows, n, y.data());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += x[r * n + i] * x[r * n + i];
    const double inv = 1.0 / std::sqrt(ss / n + 1e-5);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[r * n + i], x[r * n + i] * inv * w[i], 1e-5);
  }
}

TEST(Norm, LayerNormDefinition) {
  const int64_t n = 50;
  const auto x = test::random_floats(n, 3, -2.0f, 5.0f);
  const auto w = test::random_floats(n, 4);
  const auto b = test::random_floats(n, 5);
  std::vector<float> y(n);
  layer_norm(x.data(), w.data(), b.data(), 1e-5f, 1, n, y.data());
  double mean = 0, var = 0;
  for (float v : x) mean += v;
  mean /= n;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= n;
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], (x[i] - mean) / std::sqrt(var + 1e-5) * w[i] + b[i], 1e-5);
}

TEST(Activations, Definitions) {
  for (float x : {-5.0f, -1.0f, 0.0f, 0.5f, 3.0f}) {
    EXPECT_NEAR(silu(x), x / (1 + std::exp(-x)), 1e-6);
    EXPECT_NEAR(gelu(x), 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x))),
                1e-6);
  }
  const float gate[2] = {1.0f, -2.0f}, up[2] = {3.0f, 0.5f};
  float y[2];
  swiglu(gate, up, 2, y);
  EXPECT_NEAR(y[0], silu(1.0f) * 3.0f, 1e-6);
  EXPECT_NEAR(y[1], silu(-2.0f) * 0.5f, 1e-6);
}

TEST(Softmax, SumsToOneAndSkipsMasked) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {1.0f, 2.0f, -inf, 3.0f};
  softmax_inplace(x.data(), 4);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(x[0], std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(x[1], std::exp(2.0) / z, 1e-6);
  EXPECT_EQ(x[2], 0.0f);
  EXPECT_NEAR(x[3], std::exp(3.0) / z, 1e-6);
  std::vector<float> all_masked = {-inf, -inf};
  softmax_inplace(all_masked.data(), 2);
  EXPECT_EQ(all_masked[0], 0.0f);
}

// Rotation by the textbook angle pos * base^(-2i/d).
TEST(Rope, NormalAndNeoxMatchDefinition) {
  const int64_t head_dim = 8, heads = 2;
  const int32_t pos[2] = {0, 5};
  for (bool neox : {false, true}) {
    RopeConfig cfg;
    cfg.n_rot = 6;  // partial: dims 6, 7 untouched
    cfg.neox = neox;
    cfg.freq_base = 10000.0f;
    std::vector<float> c(2 * 3), s(2 * 3);
    rope_table(cfg, pos, 2, c.data(), s.data());
    const auto x = test::random_floats(2 * heads * head_dim, 9);
    auto y = x;
    rope_apply(cfg, c.data(), s.data(), y.data(), 2, heads, head_dim);
    for (int t = 0; t < 2; ++t) {
      for (int h = 0; h < heads; ++h) {
        const float* xv = x.data() + (t * heads + h) * head_dim;
        const float* yv = y.data() + (t * heads + h) * head_dim;
        for (int i = 0; i < 3; ++i) {
          const double theta = pos[t] * std::pow(10000.0, -2.0 * i / 6.0);
          const int a = neox ? i : 2 * i, b = neox ? i + 3 : 2 * i + 1;
          EXPECT_NEAR(yv[a], xv[a] * std::cos(theta) - xv[b] * std::sin(theta), 1e-5);
          EXPECT_NEAR(yv[b], xv[a] * std::sin(theta) + xv[b] * std::cos(theta), 1e-5);
        }
        EXPECT_EQ(yv[6], xv[6]);
        EXPECT_EQ(yv[7], xv[7]);
      }
    }
  }
}

TEST(Rope, FreqFactorsAndLinearScaleDivideTheAngle) {
  RopeConfig cfg;
  cfg.n_rot = 4;
  cfg.freq_scale = 0.5f;
  const float ff[2] = {1.0f, 4.0f};
  cfg.freq_factors = ff;
  const int32_t pos[1] = {7};
  float c[2], s[2];
  rope_table(cfg, pos, 1, c, s);
  EXPECT_NEAR(c[0], std::cos(7 * 0.5), 1e-5);
  EXPECT_NEAR(s[1], std::sin(7 * 0.5 * std::pow(10000.0, -0.5) / 4.0), 1e-5);
}

// YaRN: the angle of pair i mixes theta / factor and theta by a ramp
// between the correction dimensions of beta_fast and beta_slow, rounded out
// to whole pairs (yarn_truncate, llama.cpp's) or fractional (transformers'
// truncate false), clamped to [0, n_rot - 1]; magnitude 1 + 0.1 ln(factor).
// Written in double from that definition (theta_i by repeated f32
// multiplication, as rope.h says).
TEST(Rope, YarnRampRoundedOrFractional) {
  constexpr int kRot = 64, kCtxOrig = 32;
  constexpr double kFactor = 4.0, kBase = 10000.0;
  const int32_t pos[2] = {3, 40};
  const float step = std::pow(static_cast<float>(kBase), -2.0f / kRot);
  auto corr = [&](double beta) { return kRot * std::log(kCtxOrig / (beta * 2.0 * M_PI)) / (2.0 * std::log(kBase)); };
  std::vector<float> rounded_c;
  for (bool truncate : {true, false}) {
    RopeConfig cfg;
    cfg.n_rot = kRot;
    cfg.neox = true;
    cfg.freq_base = static_cast<float>(kBase);
    cfg.freq_scale = static_cast<float>(1.0 / kFactor);
    cfg.ext_factor = 1.0f;
    cfg.n_ctx_orig = kCtxOrig;
    cfg.yarn_truncate = truncate;
    std::vector<float> c(2 * kRot / 2), s(c.size());
    rope_table(cfg, pos, 2, c.data(), s.data());
    const double low = std::max(0.0, truncate ? std::floor(corr(32.0)) : corr(32.0));
    const double high = std::min(kRot - 1.0, truncate ? std::ceil(corr(1.0)) : corr(1.0));
    ASSERT_NE(corr(1.0), std::ceil(corr(1.0))) << "the fractional range must differ from the rounded one";
    const double mscale = 1.0 + 0.1 * std::log(kFactor);
    for (int t = 0; t < 2; ++t) {
      float theta_f = static_cast<float>(pos[t]);
      for (int i = 0; i < kRot / 2; ++i, theta_f *= step) {
        const double theta = theta_f;
        const double mix = 1.0 - std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0);
        const double ang = theta / kFactor * (1.0 - mix) + theta * mix;
        EXPECT_NEAR(c[t * kRot / 2 + i], std::cos(ang) * mscale, 2e-5) << "pair " << i << ", truncate " << truncate;
        EXPECT_NEAR(s[t * kRot / 2 + i], std::sin(ang) * mscale, 2e-5) << "pair " << i << ", truncate " << truncate;
      }
    }
    if (truncate) {
      rounded_c = c;
    } else {
      EXPECT_NE(c, rounded_c) << "the rounding of the range changes no angle";
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu
