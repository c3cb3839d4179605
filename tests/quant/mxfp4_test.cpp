// MXFP4 (quant/mxfp4.h) against ik_llama.cpp 8337e4c's libggml, built for AVX2
// outside the repository (/work/peers/tools/mxfp4/mxfp4_facts.cpp: its
// to_float and ggml_quantize_chunk). The expected FNV-1a hashes below are
// that program's output; the values themselves are also derived here
// independently from the OCP definition (E2M1 times 2^(e-127) by ldexp).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "quant/blocks.h"
#include "quant/mxfp4.h"
#include "quant/type_traits.h"

namespace ferrite::quant {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t fnv(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) {
    h ^= b[i];
    h *= kFnvPrime;
  }
  return h;
}

// The generator the facts program uses: 64-bit LCG, top 24 bits to [-1, 1).
struct Lcg {
  uint64_t s;
  float next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>((s >> 40) & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f;
  }
};

// OCP E2M1: sign bit 3, exponent bits 2..1 (bias 1), mantissa bit 0.
double e2m1(int q) {
  const int exp = (q >> 1) & 3, man = q & 1;
  const double mag = exp == 0 ? 0.5 * man : std::ldexp(1.0 + 0.5 * man, exp - 1);
  return (q & 8) != 0 ? -mag : mag;
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

TEST(Mxfp4, TraitsAndLayout) {
  const TypeTraits& t = type_traits(TensorType::MXFP4);
  EXPECT_STREQ(t.name, "mxfp4");
  EXPECT_EQ(t.block_size, 32);
  EXPECT_EQ(t.block_bytes, 17u);
  ASSERT_NE(t.from_float, nullptr);
  // Element j in the low nibble of qs[j], j + 16 in the high one (ik's output
  // for qs[j] = j | (15 - j) << 4, e = 128).
  BlockMXFP4 b{};
  b.e = 128;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  float y[32];
  t.to_float_ref(&b, y, 32);
  const float expect[32] = {0,   1,  2,  3,  4,  6,  8,  12, 0,  -1, -2, -3, -4, -6, -8, -12,
                            -12, -8, -6, -4, -3, -2, -1, 0,  12, 8,  6,  4,  3,  2,  1,  0};
  for (int j = 0; j < 32; ++j) EXPECT_EQ(bits_of(y[j]), bits_of(expect[j])) << j;
}

// Every scale byte x every code: bit-exact to ik_llama.cpp's dequantize_row_mxfp4.
TEST(Mxfp4, DequantizesEveryScaleAndCodeAsGgml) {
  const TypeTraits& t = type_traits(TensorType::MXFP4);
  uint64_t h = kFnvOffset;
  for (int e = 0; e < 256; ++e) {
    for (int q = 0; q < 16; ++q) {
      BlockMXFP4 b{};
      b.e = static_cast<uint8_t>(e);
      std::memset(b.qs, q | (q << 4), sizeof b.qs);
      float y[32];
      t.to_float_ref(&b, y, 32);
      // Independent: E2M1 x 2^(e-127); ggml's code 8 is +0, not -0.
      const auto want = static_cast<float>(std::ldexp(e2m1(q), e - 127) + 0.0);
      for (int j = 0; j < 32; ++j) {
        ASSERT_EQ(bits_of(y[j]), bits_of(want)) << "e=" << e << " q=" << q << " j=" << j;
      }
      const uint32_t bits = bits_of(y[0]);
      h = fnv(h, &bits, sizeof bits);
    }
  }
  EXPECT_EQ(h, 0x68e5fe8851ebd703ull);  // ik_llama.cpp's 4096 values
  // A few of ik's printed values as bits: subnormal scales and the overflow at e = 255.
  EXPECT_EQ(mxfp4_scale_bits(0), 0x00200000u);
  EXPECT_EQ(mxfp4_scale_bits(1), 0x00400000u);
  EXPECT_EQ(mxfp4_scale_bits(2), 0x00400000u << 1);
  EXPECT_EQ(mxfp4_scale_bits(128), 0x3f800000u);
}

// Inputs of the facts program: 64 rows of 256, block b scaled by 2^(b % 41 - 20),
// row 0 block 0 on the grid and at its ties, row 1 block 0 zero, row 2 block 0 tiny.
std::vector<float> facts_input() {
  constexpr int kN = 256, kRows = 64;
  std::vector<float> x(static_cast<size_t>(kN * kRows));
  Lcg g{12345};
  for (int i = 0; i < kN * kRows; ++i) x[static_cast<size_t>(i)] = g.next() * std::ldexp(1.0f, (i / 32) % 41 - 20);
  for (int j = 0; j < 32; ++j) {
    x[static_cast<size_t>(j)] = 0.25f * static_cast<float>(j - 16);
    x[static_cast<size_t>(kN + j)] = 0.0f;
    x[static_cast<size_t>(2 * kN + j)] = 1e-30f * static_cast<float>(j - 10);
  }
  return x;
}

TEST(Mxfp4, QuantizesAsGgml) {
  const TypeTraits& t = type_traits(TensorType::MXFP4);
  const std::vector<float> x = facts_input();
  constexpr int64_t kN = 256;
  const int64_t rows = static_cast<int64_t>(x.size()) / kN;
  std::vector<uint8_t> q(static_cast<size_t>(rows * kN / 32 * 17));
  for (int64_t r = 0; r < rows; ++r) t.from_float(x.data() + r * kN, q.data() + r * kN / 32 * 17, kN, nullptr);
  const uint8_t row0[17] = {0x7f, 0x0e, 0x0e, 0x1d, 0x1d, 0x2d, 0x2d, 0x3c, 0x3c,
                            0x4c, 0x4b, 0x4b, 0x5a, 0x5a, 0x59, 0x59, 0x60};
  const uint8_t row2[17] = {0x1d, 0x4d, 0x4d, 0x5d, 0x5c, 0x5c, 0x5b, 0x6b, 0x6a,
                            0x69, 0x69, 0x70, 0x71, 0x71, 0x72, 0x73, 0x73};
  EXPECT_EQ(0, std::memcmp(q.data(), row0, 17));
  EXPECT_EQ(0, std::memcmp(q.data() + 2 * 8 * 17, row2, 17));
  EXPECT_EQ(fnv(kFnvOffset, q.data(), q.size()), 0x0ba01539ca4e2c0cull);  // ik's ggml_quantize_chunk
  std::vector<float> y(x.size());
  t.to_float_ref(q.data(), y.data(), static_cast<int64_t>(y.size()));
  EXPECT_EQ(fnv(kFnvOffset, y.data(), y.size() * sizeof(float)), 0xc9366ff64e738e7aull);
  // Round trip: with unit u = 2^(e-127) = 2 mxfp4_scale(e), the grid's widest
  // gap (4u -> 6u) and the saturation of amax < 8u at 6u both bound the error by 2u.
  for (size_t i = 0; i < x.size(); ++i) {
    const auto* blk = reinterpret_cast<const BlockMXFP4*>(q.data()) + i / 32;
    ASSERT_LE(std::fabs(y[i] - x[i]), 4.0f * mxfp4_scale(blk->e)) << i;
  }
}

// Bad inputs: infinities and NaN give a valid scale byte, never undefined behaviour.
TEST(Mxfp4, NonFiniteAndTinyInputsStayDefined) {
  const TypeTraits& t = type_traits(TensorType::MXFP4);
  float x[32] = {};
  x[3] = INFINITY;
  x[4] = NAN;
  BlockMXFP4 b{};
  t.from_float(x, &b, 32, nullptr);
  EXPECT_EQ(b.e, 254);
  float tiny[32] = {};
  tiny[0] = 1e-45f;  // subnormal: floor(log2) - 2 + 127 < 0
  t.from_float(tiny, &b, 32, nullptr);
  EXPECT_EQ(b.e, 0);
}

}  // namespace
}  // namespace ferrite::quant
