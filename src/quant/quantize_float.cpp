// Quantizers of the float types and the plain 8-bit types (round to nearest,
// scale = absmax / 127; the importance matrix cannot change the best choice).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quantize_ref.h"

namespace ferrite::quant::ref {

namespace {
constexpr float kQ8Max = 127.0f;

// Rounds to nearest, ties away from zero.
inline int round_int(float v) { return static_cast<int>(std::lround(v)); }

// 32 values to q8 with scale absmax/127; returns the scale.
float q8_block(const float* x, int8_t* q, int count) {
  float amax = 0.0f;
  for (int j = 0; j < count; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / kQ8Max;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < count; ++j) q[j] = static_cast<int8_t>(round_int(x[j] * id));
  return d;
}
}  // namespace

void quantize_f32(const float* x, void* dst, int64_t n, const float*) {
  std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
}

void quantize_f16(const float* x, void* dst, int64_t n, const float*) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(x[i]);
}

void quantize_bf16(const float* x, void* dst, int64_t n, const float*) {
  auto* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(x[i]);
}

void quantize_q8_0(const float* x, void* dst, int64_t n, const float*) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) b[i].d = fp32_to_fp16(q8_block(x, b[i].qs, kQK));
}

void quantize_q8_1(const float* x, void* dst, int64_t n, const float*) {
  auto* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d = q8_block(x, b[i].qs, kQK);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) sum += b[i].qs[j];
    b[i].d = fp32_to_fp16(d);
    b[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
  }
}

void quantize_q8_k(const float* x, void* dst, int64_t n, const float*) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    // Scale from the largest-magnitude value so it maps to exactly -127 or 127.
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQKK; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&b[i], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -kQ8Max / max;
    for (int j = 0; j < kQKK; ++j) b[i].qs[j] = static_cast<int8_t>(std::min(127, round_int(iscale * x[j])));
    for (int g = 0; g < kQKK / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += b[i].qs[16 * g + j];
      b[i].bsums[g] = static_cast<int16_t>(sum);
    }
    b[i].d = 1.0f / iscale;
  }
}

}  // namespace ferrite::quant::ref
