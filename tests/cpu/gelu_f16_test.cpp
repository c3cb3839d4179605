// GELU through llama.cpp's f16 table against its definition: the tanh
// approximation (computed here in double) at the f16-rounded input, with the
// result rounded to f16; 0 at or below -10 and x at or above 10.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "cpu/features.h"
#include "cpu/ops/gelu_f16.h"

namespace ferrite {
namespace {

double gelu_def(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * x * (1.0 + 0.044715 * x * x))); }

TEST(GeluF16, MatchesDefinitionWithinOneF16Step) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-12.0f, 12.0f);
  for (int i = 0; i < 20000; ++i) {
    const float x = u(rng);
    const float got = cpu::gelu_f16(x);
    if (x <= -10.0f) {
      EXPECT_EQ(got, 0.0f);
      continue;
    }
    if (x >= 10.0f) {
      EXPECT_EQ(got, x);
      continue;
    }
    // The table entry is an f16: exactly representable, and within one f16
    // rounding step of the definition at the rounded input, plus the f32
    // cancellation in 1 + tanh(t) for negative x (|x| ulps of 1).
    EXPECT_EQ(fp16_to_fp32(fp32_to_fp16(got)), got);
    const double xr = fp16_to_fp32(fp32_to_fp16(x));
    const double want = gelu_def(xr);
    const double step = std::max(std::fabs(want) * std::ldexp(1.0, -10), std::ldexp(1.0, -24)) +
                        std::fabs(xr) * std::ldexp(1.0, -23);
    EXPECT_LE(std::fabs(got - want), step) << "x = " << x;
  }
}

TEST(GeluF16, GegluMultipliesByUp) {
  const float gate[] = {-11.0f, -1.5f, 0.0f, 0.7f, 3.0f, 12.0f};
  const float up[] = {2.0f, -3.0f, 5.0f, 0.5f, -1.0f, 0.25f};
  float y[6];
  cpu::geglu_f16(gate, up, 6, y);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], cpu::gelu_f16(gate[i]) * up[i]);
  float x[6] = {-11.0f, -1.5f, 0.0f, 0.7f, 3.0f, 12.0f};
  cpu::gelu_f16_inplace(x, 6);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(x[i], cpu::gelu_f16(gate[i]));
}


// The AVX2 and AVX-512 kernels against the scalar lookup, bit for bit: every
// f16 value (each table entry), random values around the cuts and in the f16
// subnormal range, lengths that leave a scalar tail, and in-place use.
TEST(GeluF16, SimdEqualsScalarBitForBit) {
  using Kernel = void (*)(const uint16_t*, const float*, const float*, int64_t, float*);
  std::vector<Kernel> kernels;
  const cpu::Isa top = cpu::detected_isa();
  if (top == cpu::Isa::Avx2 || top == cpu::Isa::Avx512) kernels.push_back(cpu::geglu_f16_avx2);
  if (top == cpu::Isa::Avx512) kernels.push_back(cpu::geglu_f16_avx512);
  if (kernels.empty()) GTEST_SKIP() << "no AVX2 or AVX-512 on this CPU";
  std::vector<float> x;
  for (uint32_t h = 0; h < (1u << 16); ++h) x.push_back(fp16_to_fp32(static_cast<uint16_t>(h)));
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f), tiny(-1e-6f, 1e-6f);
  for (int i = 0; i < 20000; ++i) x.push_back(wide(rng));
  for (int i = 0; i < 5000; ++i) x.push_back(tiny(rng));
  for (float v : {-10.0f, 10.0f, std::nextafter(-10.0f, 0.0f), std::nextafter(10.0f, 0.0f), 65520.0f, -65520.0f,
                  1e30f, -1e30f, INFINITY, -INFINITY})
    x.push_back(v);
  x.push_back(7.0f);  // 90,547 values in all: a scalar tail of 3 after the 16-wide steps
  std::vector<float> up(x.size());
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (float& v : up) v = u(rng);
  const uint16_t* table = cpu::gelu_f16_table();
  const auto same_bits = [](float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::memcmp(&a, &b, sizeof a) == 0;
  };
  for (size_t kk = 0; kk < kernels.size(); ++kk) {
    SCOPED_TRACE(kk == 0 ? "avx2" : "avx512");
    std::vector<float> y(x.size());
    kernels[kk](table, x.data(), up.data(), static_cast<int64_t>(x.size()), y.data());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(same_bits(y[i], cpu::gelu_f16(x[i]) * up[i])) << "x = " << x[i] << " i = " << i;
    }
    std::vector<float> in_place = x;
    kernels[kk](table, in_place.data(), nullptr, static_cast<int64_t>(x.size()), in_place.data());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_TRUE(same_bits(in_place[i], cpu::gelu_f16(x[i]))) << "x = " << x[i] << " i = " << i;
    }
  }
}

}  // namespace
}  // namespace ferrite
