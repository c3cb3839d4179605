// cpu::tanh_f32 (the soft-cap's tanh, cpu/ops/tanh_f32_impl.h): within 2 ulp of
// tanh in double everywhere, odd, with the limits of tanh; and on x86-64
// glibc 2.36, the library llama.cpp's goldens came from, equal to its tanhf
// bit for bit on a sample of every float. (arm64's glibc 2.36 builds the
// same C with fused multiply-adds: 1,568 of the 44 million sampled floats
// differ by an ulp under qemu-aarch64, so ARM is not compared.)
#include <gnu/libc-version.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "cpu/ops/tanh_f32.h"

namespace ferrite::cpu {
namespace {

float from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// Distance in representable floats (same sign).
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  return std::llabs(static_cast<int64_t>(ia) - ib);
}

TEST(TanhF32, WithinTwoUlpOfDoubleAndOdd) {
  int64_t worst = 0;
  for (uint32_t b = 0; b < 0x7f800000u; b += 251) {
    const float x = from_bits(b);
    const float got = tanh_f32(x);
    const float want = static_cast<float>(std::tanh(static_cast<double>(x)));
    worst = std::max(worst, ulps(got, want));
    ASSERT_EQ(tanh_f32(-x), -got) << x;
  }
  EXPECT_LE(worst, 2);
}

TEST(TanhF32, Limits) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(tanh_f32(inf), 1.0f);
  EXPECT_EQ(tanh_f32(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(tanh_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(tanh_f32(30.0f), 1.0f);
  EXPECT_EQ(tanh_f32(-1e30f), -1.0f);
  EXPECT_EQ(tanh_f32(1e-30f), 1e-30f);
  EXPECT_TRUE(std::signbit(tanh_f32(-0.0f)));
}

TEST(TanhF32, SoftcapScalesTanh) {
  float x[3] = {-100.0f, 3.0f, 0.0f};
  softcap_f32(x, 3, 30.0f);
  EXPECT_EQ(x[0], tanh_f32(-100.0f * (1.0f / 30.0f)) * 30.0f);
  EXPECT_EQ(x[1], tanh_f32(3.0f * (1.0f / 30.0f)) * 30.0f);
  EXPECT_EQ(x[2], 0.0f);
  EXPECT_GT(x[0], -30.0f);
}

TEST(TanhF32, EqualsGlibc236Tanhf) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "this architecture's glibc rounds its tanhf's steps otherwise (fused multiply-adds)";
#endif
  if (std::string(gnu_get_libc_version()) != "2.36") {
    GTEST_SKIP() << "glibc " << gnu_get_libc_version() << ": its tanhf is another algorithm";
  }
  int64_t differ = 0, n = 0;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 97) {
    const float x = from_bits(static_cast<uint32_t>(u));
    const float a = tanh_f32(x), b = ::tanhf(x);
    if (std::memcmp(&a, &b, sizeof a) != 0 && !(std::isnan(a) && std::isnan(b))) ++differ;
    ++n;
  }
  EXPECT_EQ(differ, 0) << "of " << n;
}

}  // namespace
}  // namespace ferrite::cpu
