// GELU through llama.cpp's f16 table against its definition: the tanh
// approximation (computed here in double) at the f16-rounded input, with the
// result rounded to f16; 0 at or below -10 and x at or above 10.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/fp16.h"
#include "cpu/gelu_f16.h"

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

}  // namespace
}  // namespace ferrite
