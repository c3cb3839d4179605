// MXFP4 (OCP microscaling FP4, ggml type 39) as ggml computes it: a block of
// 32 E2M1 codes shares one E8M0 exponent byte e (quant/blocks.h). ggml turns
// a code into the signed integer 2 * E2M1 (kMxfp4Values: 0, 0.5, 1, 1.5, 2,
// 3, 4, 6 doubled, code 8 is +0 rather than -0) and e into half of 2^(e-127),
// so x = mxfp4_scale(e) * kMxfp4Values[q] and a product with 8-bit
// activations is an integer sum times one float per block.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FERRITE_MXFP4_HD __host__ __device__
#else
#define FERRITE_MXFP4_HD
#endif

namespace ferrite::quant {

constexpr std::array<int8_t, 16> kMxfp4Values = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// IEEE single bits of 2^(e-128), the half of 2^(e-127): exponent field e - 1
// for e >= 2; the subnormals 2^-127 (e = 1) and 2^-128 (e = 0) below. Never
// NaN (ggml gives e = 255 no special meaning either). Host and device.
FERRITE_MXFP4_HD constexpr uint32_t mxfp4_scale_bits(uint8_t e) {
  return e >= 2 ? static_cast<uint32_t>(e - 1) << 23 : (e == 1 ? 0x00400000u : 0x00200000u);
}

inline float mxfp4_scale(uint8_t e) {
  const uint32_t bits = mxfp4_scale_bits(e);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace ferrite::quant
