// fp16/bf16 conversions against their definitions.
#include "core/fp16.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include <gtest/gtest.h>

namespace {

// binary16 value by its definition: (-1)^s * 2^(e-15) * (1 + m/1024), with
// subnormals 2^-14 * m/1024.
double half_by_definition(uint16_t h) {
  const int s = h >> 15;
  const int e = (h >> 10) & 0x1F;
  const int m = h & 0x3FF;
  double v;
  if (e == 0) {
    v = std::ldexp(m / 1024.0, -14);
  } else if (e == 31) {
    v = m ? NAN : INFINITY;
  } else {
    v = std::ldexp(1.0 + m / 1024.0, e - 15);
  }
  return s ? -v : v;
}

TEST(Fp16, EveryHalfConvertsExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = half_by_definition(static_cast<uint16_t>(h));
    const float got = ferrite::fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(static_cast<double>(got), want) << "half bits " << h;
      ASSERT_EQ(std::signbit(got), (h >> 15) != 0) << h;
    }
  }
}

TEST(Fp16, RoundTripOfEveryHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = ferrite::fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(ferrite::fp32_to_fp16(f), h) << h;
  }
}

// Round to nearest, ties to even, checked against the two neighbouring halves.
TEST(Fp16, RandomFloatsRoundToNearestEven) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    const float f = std::bit_cast<float>(bits(rng));
    if (std::isnan(f)) continue;
    const uint16_t h = ferrite::fp32_to_fp16(f);
    const double got = half_by_definition(h);
    const double x = f;
    if (std::fabs(x) >= 65520.0) {
      ASSERT_TRUE(std::isinf(got)) << f;
      continue;
    }
    // Neighbour halves one unit away in magnitude.
    const uint16_t up = static_cast<uint16_t>(h + 1);
    const uint16_t down = static_cast<uint16_t>((h & 0x7FFF) ? h - 1 : h);
    const double err = std::fabs(got - x);
    for (uint16_t n : {up, down}) {
      if ((n & 0x7C00) == 0x7C00 || (n ^ h) & 0x8000) continue;
      const double e2 = std::fabs(half_by_definition(n) - x);
      ASSERT_LE(err, e2) << "f=" << f;
      if (err == e2 && n != h) {
        ASSERT_EQ(h & 1, 0) << "tie not to even, f=" << f;
      }
    }
  }
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(ferrite::fp32_to_bf16(1.0f), 0x3F80);
  // 1 + 2^-8 is exactly half way between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(ferrite::fp32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  // 1 + 3*2^-8 is half way between 1+2^-7 (odd) and 1+2^-6 (even).
  EXPECT_EQ(ferrite::fp32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_TRUE(std::isnan(ferrite::bf16_to_fp32(ferrite::fp32_to_bf16(NAN))));
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = ferrite::bf16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(ferrite::fp32_to_bf16(f), h);
  }
}

}  // namespace
