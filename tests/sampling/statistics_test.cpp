// The random stages, statistically: many seeded draws against the
// distribution each definition predicts, judged by Pearson's chi-square test.
//
// The seeds are fixed, so every test is deterministic. The thresholds are the
// chi-square critical values at significance 0.001 for the test's degrees of
// freedom (categories - 1): a correct sampler with a seed picked at random
// would fail with probability 0.1%, while a wrong distribution of the sizes
// tested here (N = 10^5) gives statistics in the hundreds or more.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sampling/rng.h"
#include "sampling/sampler.h"
#include "test_util.h"

namespace ferrite::sampling {
namespace {
using test::logits_for;

// Upper 0.001 quantiles of the chi-square distribution, by degrees of freedom
// (standard tables, e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.4).
double chi2_critical_0001(int df) {
  static const double kTable[] = {0.0, 10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124, 27.877};
  return kTable[df];
}

// Pearson's statistic; categories with expected probability 0 must be empty.
double chi_square(const std::vector<int>& counts, const std::vector<double>& probs, int n) {
  double x2 = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "category " << i << " has probability 0";
      continue;
    }
    const double e = probs[i] * n;
    x2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return x2;
}

int degrees(const std::vector<double>& probs) {
  int k = 0;
  for (double p : probs) k += p > 0.0;
  return k - 1;
}

SamplerParams plain_params(uint64_t seed) {
  SamplerParams p;
  p.seed = seed;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.temperature = 1.0f;
  return p;
}

constexpr int kDraws = 100000;

void expect_distribution(const SamplerParams& params, const std::vector<float>& logits,
                         const std::vector<double>& want) {
  Sampler s(params);
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<size_t>(s.choose(logits))];
  const double x2 = chi_square(counts, want, kDraws);
  EXPECT_LT(x2, chi2_critical_0001(degrees(want))) << "chi-square " << x2;
}

TEST(Statistics, RngUniformIsUniform) {
  Rng rng(2024, 0);
  constexpr int kBins = 10;
  std::vector<int> counts(kBins, 0);
  for (int i = 0; i < kDraws; ++i) {
    const double u = rng.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ++counts[static_cast<size_t>(u * kBins)];
  }
  const double x2 = chi_square(counts, std::vector<double>(kBins, 0.1), kDraws);
  EXPECT_LT(x2, chi2_critical_0001(kBins - 1));
}

TEST(Statistics, DrawFollowsSoftmax) {
  const std::vector<float> l = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f};
  expect_distribution(plain_params(1), l, test::ref_softmax({0.0, 1.0, 2.0, 0.5, -1.0}));
}

TEST(Statistics, TemperatureAndTopK) {
  // top-3 of (0, 1, 2, 0.5, -1) are ids 2, 1, 3; softmax of their logits / 0.7.
  SamplerParams p = plain_params(2);
  p.top_k = 3;
  p.temperature = 0.7f;
  const auto sub = test::ref_softmax({1.0 / 0.7, 2.0 / 0.7, 0.5 / 0.7});
  expect_distribution(p, {0.0f, 1.0f, 2.0f, 0.5f, -1.0f}, {0.0, sub[0], sub[1], sub[2], 0.0});
}

TEST(Statistics, TopP) {
  // Cumulative 0.5, 0.7, 0.85 reaches 0.8 at the third: renormalize over 0.85.
  SamplerParams p = plain_params(3);
  p.top_p = 0.8f;
  expect_distribution(p, logits_for({0.5, 0.2, 0.15, 0.1, 0.05}), {0.5 / 0.85, 0.2 / 0.85, 0.15 / 0.85, 0.0, 0.0});
}

TEST(Statistics, MinP) {
  // p >= 0.25 * 0.4 = 0.1 keeps 0.4, 0.3, 0.15.
  SamplerParams p = plain_params(4);
  p.min_p = 0.25f;
  expect_distribution(p, logits_for({0.4, 0.3, 0.15, 0.09, 0.06}), {0.4 / 0.85, 0.3 / 0.85, 0.15 / 0.85, 0.0, 0.0});
}

TEST(Statistics, XtcMixesTheTwoDistributions) {
  // p = 0.5, 0.3, 0.2, threshold 0.25: when XTC fires (probability 0.5) token
  // 0 goes and the rest renormalize to 0.6, 0.4. Overall:
  // P(0) = 0.5 * 0.5, P(1) = 0.5 * 0.3 + 0.5 * 0.6, P(2) = 0.5 * 0.2 + 0.5 * 0.4.
  SamplerParams p = plain_params(5);
  p.xtc_probability = 0.5f;
  p.xtc_threshold = 0.25f;
  expect_distribution(p, logits_for({0.5, 0.3, 0.2}), {0.25, 0.45, 0.30});
}

TEST(Statistics, MirostatV2FirstStepOverSeeds) {
  // tau 1.5 (mu 3) keeps surprises <= 3 bits: 0.5, 0.25, 0.125 of
  // 0.5, 0.25, 0.125, 0.0625, 0.0625. One fresh sampler per seed: this also
  // checks that consecutive seeds give independent streams.
  constexpr int kSeeds = 20000;
  const std::vector<float> l = logits_for({0.5, 0.25, 0.125, 0.0625, 0.0625});
  std::vector<int> counts(l.size(), 0);
  for (int seed = 0; seed < kSeeds; ++seed) {
    SamplerParams p = plain_params(static_cast<uint64_t>(seed));
    p.mirostat = 2;
    p.mirostat_tau = 1.5f;
    Sampler s(p);
    ++counts[static_cast<size_t>(s.choose(l))];
  }
  const std::vector<double> want = {0.5 / 0.875, 0.25 / 0.875, 0.125 / 0.875, 0.0, 0.0};
  const double x2 = chi_square(counts, want, kSeeds);
  EXPECT_LT(x2, chi2_critical_0001(degrees(want))) << "chi-square " << x2;
}

TEST(Statistics, DynamicTemperature) {
  // Uniform logits over 4: normalized entropy 1, T = t + range = 1.5; the
  // distribution stays uniform. Non-uniform: logits / T, T from the formula.
  SamplerParams p = plain_params(6);
  p.dynatemp_range = 0.5f;
  p.dynatemp_exponent = 2.0f;
  // p = 0.5, 0.25, 0.125, 0.125 -> T = 1.265625 (see temperature_test.cpp).
  const double t = 1.265625;
  const auto want = test::ref_softmax({std::log(0.5) / t, std::log(0.25) / t, std::log(0.125) / t,
                                       std::log(0.125) / t});
  expect_distribution(p, logits_for({0.5, 0.25, 0.125, 0.125}), want);
}

}  // namespace
}  // namespace ferrite::sampling
