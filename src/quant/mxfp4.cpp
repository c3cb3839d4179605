// Reference dequantizer and quantizer of MXFP4 (quant/mxfp4.h).
//
// Quantizer (ggml's rule, the OCP spec's shared-scale choice): per block of
// 32, amax = max |x|; e = floor(log2(amax)) - 2 + 127 (2 = the exponent of
// E2M1's largest value 6), so the block's largest magnitude lands in
// [4, 8) x 2^(e-127) and saturates to 6 above 6; every element then takes
// the code whose value scale * kMxfp4Values[q] is nearest, ties to the lower
// code (codes 0 and 8 are both zero: 0 wins). ggml leaves e undefined where
// floor(log2(amax)) - 2 + 127 falls outside a byte (amax below 2^-125, or
// infinite); here it is clamped to 0..254. NaN elements are ignored by amax.
// An all-zero block is e = 0 with zero codes. The importance matrix is not
// used (ggml's MXFP4 quantizer ignores it too).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "quant/blocks.h"
#include "quant/dequant_ref.h"
#include "quant/mxfp4.h"
#include "quant/quantize_ref.h"

namespace ferrite::quant::ref {
namespace {

constexpr int kHalf = kQK / 2;
constexpr int kE2m1MaxExp = 2;  // 6 = 1.5 x 2^2
constexpr int kBias = 127;
constexpr int kMaxScaleByte = 254;

uint8_t scale_byte(float amax) {
  if (!(amax < INFINITY)) return kMaxScaleByte;
  const float e = std::floor(std::log2(amax)) - kE2m1MaxExp + kBias;
  return static_cast<uint8_t>(std::clamp(e, 0.0f, static_cast<float>(kMaxScaleByte)));
}

uint8_t nearest_code(float d, float x) {
  float best = std::fabs(x - d * kMxfp4Values[0]);
  uint8_t code = 0;
  for (uint8_t q = 1; q < kMxfp4Values.size(); ++q) {
    const float diff = std::fabs(x - d * kMxfp4Values[q]);
    if (diff < best) {
      best = diff;
      code = q;
    }
  }
  return code;
}

}  // namespace

void dequant_mxfp4(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockMXFP4*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = mxfp4_scale(b[i].e);
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = d * static_cast<float>(kMxfp4Values[b[i].qs[j] & 0xF]);
      dst[j + kHalf] = d * static_cast<float>(kMxfp4Values[b[i].qs[j] >> 4]);
    }
  }
}

void quantize_mxfp4(const float* x, void* dst, int64_t n, const float* /*importance*/) {
  auto* b = static_cast<BlockMXFP4*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* xb = x + i * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(xb[j]));
    b[i] = BlockMXFP4{};
    if (amax == 0.0f) continue;
    b[i].e = scale_byte(amax);
    const float d = mxfp4_scale(b[i].e);
    for (int j = 0; j < kHalf; ++j) {
      b[i].qs[j] = static_cast<uint8_t>(nearest_code(d, xb[j]) | (nearest_code(d, xb[j + kHalf]) << 4));
    }
  }
}

}  // namespace ferrite::quant::ref
