// Mirostat v1 and v2: truncation and the mu update, against their
// definitions.
#include <gtest/gtest.h>

#include <cmath>

#include "sampling/mirostat.h"
#include "test_util.h"

namespace ferrite::sampling {
namespace {
using test::logits_for;
using test::make;

// p_i proportional to 1 / (i+1)^s: a Zipf distribution of exponent s.
std::vector<double> zipf(int n, double s) {
  std::vector<double> p(static_cast<size_t>(n));
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += p[static_cast<size_t>(i)] = std::pow(i + 1.0, -s);
  for (double& x : p) x /= sum;
  return p;
}

double expected_k(double s, double mu, double n_vocab) {
  const double eps = s - 1.0;
  return std::pow(eps * std::pow(2.0, mu) / (1.0 - std::pow(n_vocab, -eps)), 1.0 / s);
}

TEST(MirostatV1, EstimatesTheZipfExponentAndK) {
  // On an exact Zipf distribution the estimate s_hat equals s.
  Candidates c = make(logits_for(zipf(500, 1.2)));
  sort_all(c);
  softmax(c);
  const double k = MirostatV1::top_k_for(c, 100, 3.0f, 32000);
  EXPECT_NEAR(k, expected_k(1.2, 3.0, 32000), 1e-3 * k);
}

TEST(MirostatV1, ExponentOneUsesTheLimit) {
  // s = 1: eps / (1 - n^-eps) -> 1 / ln n, so k = 2^mu / ln n.
  Candidates c = make(logits_for(zipf(200, 1.0)));
  sort_all(c);
  softmax(c);
  const double k = MirostatV1::top_k_for(c, 100, 10.0f, 32000);
  EXPECT_NEAR(k, std::pow(2.0, 10.0) / std::log(32000.0), 0.01 * k);
}

TEST(MirostatV1, TruncatesToKAndUpdatesMu) {
  const MirostatParams params{3.0f, 0.2f, 100};
  MirostatV1 m(params, 32000);
  EXPECT_FLOAT_EQ(m.mu(), 6.0f);
  const auto probs = zipf(500, 1.2);
  Candidates c = make(logits_for(probs));
  Rng rng(7, 0);
  const size_t idx = m.choose(c, rng);
  const auto k = static_cast<size_t>(expected_k(1.2, 6.0, 32000));
  ASSERT_EQ(c.size(), k);
  // The surprise uses the probability renormalized over the k kept.
  double kept = 0.0;
  for (size_t i = 0; i < k; ++i) kept += probs[i];
  const double p = probs[static_cast<size_t>(c.items[idx].id)] / kept;
  EXPECT_NEAR(m.mu(), 6.0 - 0.2 * (-std::log2(p) - 3.0), 1e-4);
}

TEST(MirostatV1, SingleCandidate) {
  MirostatV1 m({5.0f, 0.1f, 100}, 10);
  Candidates c = make({1.0f});
  Rng rng(1, 0);
  EXPECT_EQ(m.choose(c, rng), 0u);
  EXPECT_FLOAT_EQ(m.mu(), 10.0f - 0.1f * (0.0f - 5.0f));
}

TEST(MirostatV2, KeepsSurprisesUpToMuAndUpdates) {
  // Surprises 1, 2, 3, 4 bits; tau 1.5 -> mu 3 keeps the first three.
  const std::vector<double> probs = {0.5, 0.25, 0.125, 0.0625, 0.0625};
  MirostatV2 m({1.5f, 0.1f, 100});
  Candidates c = make(logits_for(probs));
  Rng rng(3, 0);
  const size_t idx = m.choose(c, rng);
  ASSERT_EQ(c.size(), 3u);
  const double p = probs[static_cast<size_t>(c.items[idx].id)] / 0.875;
  EXPECT_NEAR(m.mu(), 3.0 - 0.1 * (-std::log2(p) - 1.5), 1e-5);
}

TEST(MirostatV2, KeepsAtLeastOneAndResets) {
  // mu = 2 * 0.25 = 0.5 < every surprise: only the best stays, chosen with
  // probability 1 (surprise 0): mu = 0.5 - 0.1 * (0 - 0.25).
  MirostatV2 m({0.25f, 0.1f, 100});
  Candidates c = make(logits_for({0.5, 0.3, 0.2}));
  Rng rng(3, 0);
  EXPECT_EQ(c.items[m.choose(c, rng)].id, 0);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_FLOAT_EQ(m.mu(), 0.525f);
  m.reset();
  EXPECT_FLOAT_EQ(m.mu(), 0.5f);
}

}  // namespace
}  // namespace ferrite::sampling
