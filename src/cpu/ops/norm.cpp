#include "cpu/ops/norm.h"

#include <cmath>

namespace ferrite::cpu {

void rms_norm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t n, float* y) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i] * xr[i]);  // f32 product, f64 sum
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(mean + eps);
    if (weight != nullptr) {
      for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] * scale) * weight[i];
    } else {
      for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale;
    }
  }
}

void layer_norm(const float* x, const float* weight, const float* bias, float eps, int64_t n_rows, int64_t n,
                float* y) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += xr[i];
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    double sum2 = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const float d = xr[i] - mean;
      sum2 += static_cast<double>(d * d);
    }
    const float variance = static_cast<float>(sum2 / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(variance + eps);
    for (int64_t i = 0; i < n; ++i) {
      float v = (xr[i] - mean) * scale;
      if (weight != nullptr) v *= weight[i];
      if (bias != nullptr) v += bias[i];
      yr[i] = v;
    }
  }
}

}  // namespace ferrite::cpu
