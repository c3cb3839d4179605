// The AVX-512 level rounding of the scale searches against the plain
// reference on random inputs: identical levels, sums equal up to rounding.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "quant/round_levels.h"

namespace ferrite::quant {
namespace {

bool host_has_avx512() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#else
  return false;  // the aarch64 build
#endif
}

TEST(RoundLevels, Avx512MatchesReference) {
  if (!host_has_avx512()) GTEST_SKIP() << "no AVX-512";
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(0.0f, 2.0f);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + trial % 40;  // tails of every length
    std::vector<float> x(n), w(n), wx(n);
    for (int i = 0; i < n; ++i) {
      x[i] = normal(rng);
      w[i] = uniform(rng);
      wx[i] = w[i] * x[i];
    }
    if (trial % 7 == 0) x[trial % n] = NAN;  // NaN goes to the lowest level
    const int lo = -(trial % 33), hi = 1 + trial % 31;
    const float iscale = 0.5f + 10.0f * uniform(rng), origin = trial % 3 == 0 ? normal(rng) : 0.0f;
    std::vector<int> l_ref(n, -999), l_fast(n, -999);
    const LevelSums a = round_levels_ref(x.data(), w.data(), wx.data(), n, iscale, origin, lo, hi, l_ref.data());
    const LevelSums b = avx512::round_levels(x.data(), w.data(), wx.data(), n, iscale, origin, lo, hi, l_fast.data());
    ASSERT_EQ(l_ref, l_fast) << "trial " << trial;
    if (std::isnan(a.sxl)) continue;  // NaN x makes wx NaN: both sums NaN
    const float tol = 1e-4f * (1.0f + static_cast<float>(n) * static_cast<float>(std::max(-lo, hi) * std::max(-lo, hi)));
    EXPECT_NEAR(a.sl, b.sl, tol);
    EXPECT_NEAR(a.sll, b.sll, tol);
    EXPECT_NEAR(a.sxl, b.sxl, tol);
  }
}

TEST(RoundLevels, ReferenceRoundsHalfAwayFromZeroAndClamps) {
  const float x[] = {0.5f, -0.5f, 1.49f, -2.5f, 100.0f, -100.0f, 0.0f, 2.5f};
  const float w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  int L[8];
  const LevelSums s = round_levels_ref(x, w, x, 8, 1.0f, 0.0f, -4, 3, L);
  const int expected[] = {1, -1, 1, -3, 3, -4, 0, 3};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(L[i], expected[i]) << i;
  EXPECT_FLOAT_EQ(s.sl, 1 - 1 + 1 - 3 + 3 - 4 + 0 + 3);
}

}  // namespace
}  // namespace ferrite::quant
