#include "cpu/ops/activations.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {
constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluCoef = 0.044715f;
}  // namespace

float silu(float x) { return x / (1.0f + std::exp(-x)); }

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

float gelu(float x) { return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kGeluCoef * x * x))); }

void swiglu(const float* gate, const float* up, int64_t n_rows, int64_t n, float* y) {
  const VecOps& ops = vec_ops();
  for (int64_t r = 0; r < n_rows; ++r) {
    float* yr = y + r * n;
    const float* ur = up + r * n;
    if (yr == ur) {
      // y aliases up: SiLU into a temporary is not needed if done element-wise after.
      std::vector<float> tmp(static_cast<size_t>(n));
      ops.silu(gate + r * n, tmp.data(), n);
      for (int64_t i = 0; i < n; ++i) yr[i] = tmp[i] * ur[i];
    } else {
      ops.silu(gate + r * n, yr, n);
      for (int64_t i = 0; i < n; ++i) yr[i] *= ur[i];
    }
  }
}

void geglu(const float* gate, const float* up, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = gelu(gate[i]) * up[i];
}

void silu_inplace(float* x, int64_t n_rows, int64_t n) {
  const VecOps& ops = vec_ops();
  for (int64_t r = 0; r < n_rows; ++r) ops.silu(x + r * n, x + r * n, n);
}

void gelu_inplace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = gelu(x[i]);
}

void swiglu_oai(const float* gate, const float* up, int64_t n, float alpha, float limit, float* y) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], limit);
    const float u = std::min(std::max(up[i], -limit), limit);
    y[i] = g / (1.0f + std::exp(alpha * -g)) * (u + 1.0f);
  }
}

void clamp_inplace(float* x, int64_t n, float c) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], -c), c);
}

void softmax_inplace(float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  // A comparison, not std::fmax (a libm call per element at baseline x86-64);
  // the same maximum: NaN compares false and is skipped as fmax skips it.
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] > max) max = x[i];
  }
  if (max == -std::numeric_limits<float>::infinity()) {
    for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  const double sum = vec_ops().softmax_exp(x, n, max);
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void softmax_inplace(float* x, int64_t n, float sink) {
  float max = sink;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] > max) max = x[i];
  }
  if (max == -std::numeric_limits<float>::infinity()) {
    for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  double sum = vec_ops().softmax_exp(x, n, max);
  sum += static_cast<double>(std::exp(sink - max));
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}


}  // namespace ferrite::cpu
