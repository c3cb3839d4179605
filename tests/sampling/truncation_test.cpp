// Each truncation stage on hand-made distributions, against its definition.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sampling/truncation.h"
#include "test_util.h"

namespace ferrite::sampling {
namespace {
using test::id_set;
using test::ids_in_order;
using test::logits_for;
using test::make;
using V = std::vector<int32_t>;
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(TopK, KeepsTheKLargestInOrder) {
  Candidates c = make({0.1f, 3.0f, -1.0f, 2.0f, 5.0f});
  top_k(c, 3);
  EXPECT_EQ(ids_in_order(c), (V{4, 1, 3}));
  EXPECT_TRUE(c.sorted);
}

TEST(TopK, KLargerThanVocabKeepsAll) {
  Candidates c = make({0.1f, 3.0f, -1.0f});
  top_k(c, 100);
  EXPECT_EQ(ids_in_order(c), (V{1, 0, 2}));
}

TEST(TopK, ZeroOrNegativeIsNoCut) {
  Candidates c = make({0.1f, 3.0f, -1.0f});
  top_k(c, 0);
  EXPECT_EQ(ids_in_order(c), (V{0, 1, 2}));
  top_k(c, -5);
  EXPECT_EQ(c.size(), 3u);
}

TEST(TopK, EqualLogitsBreakTiesByLowerId) {
  Candidates c = make({1.0f, 1.0f, 1.0f, 1.0f, 1.0f});
  top_k(c, 2);
  EXPECT_EQ(ids_in_order(c), (V{0, 1}));
}

TEST(TopK, SingleCandidate) {
  Candidates c = make({-7.0f});
  top_k(c, 1);
  EXPECT_EQ(ids_in_order(c), (V{0}));
}

TEST(TopP, SmallestPrefixReachingP) {
  // p = 0.4, 0.3, 0.2, 0.1: cumulative 0.4, 0.7, 0.9, 1.0.
  Candidates c = make(logits_for({0.1, 0.4, 0.2, 0.3}));
  top_p(c, 0.65f, 0);
  EXPECT_EQ(ids_in_order(c), (V{1, 3}));
  Candidates d = make(logits_for({0.1, 0.4, 0.2, 0.3}));
  top_p(d, 0.75f, 0);
  EXPECT_EQ(ids_in_order(d), (V{1, 3, 2}));
}

TEST(TopP, OneIsNoCutAndZeroKeepsTheBest) {
  Candidates c = make(logits_for({0.1, 0.4, 0.2, 0.3}));
  top_p(c, 1.0f, 0);
  EXPECT_EQ(c.size(), 4u);
  top_p(c, 0.0f, 0);
  EXPECT_EQ(ids_in_order(c), (V{1}));
}

TEST(TopP, MinKeep) {
  Candidates c = make(logits_for({0.1, 0.4, 0.2, 0.3}));
  top_p(c, 0.0f, 3);
  EXPECT_EQ(ids_in_order(c), (V{1, 3, 2}));
}

TEST(TopP, AllEqualLogits) {
  // 8 candidates of 1/8: reaching 0.5 takes 4 (ties by id).
  Candidates c = make(std::vector<float>(8, 2.0f));
  top_p(c, 0.5f, 0);
  EXPECT_EQ(ids_in_order(c), (V{0, 1, 2, 3}));
}

TEST(TopP, LargeUnsortedListBeyondTheFirstSortedBlock) {
  // 1000 equal candidates: p = 0.9 needs 900, more than the first sorted block.
  Candidates c = make(std::vector<float>(1000, 0.0f));
  top_p(c, 0.9f, 0);
  ASSERT_GE(c.size(), 899u);  // float rounding of the cumulative sum
  ASSERT_LE(c.size(), 901u);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(c.items[i].id, static_cast<int32_t>(i));
}

TEST(MinP, KeepsAtLeastPTimesTheMax) {
  // p_max = 0.5; min_p 0.25 keeps p >= 0.125: 0.5, 0.3, 0.15 (not 0.05).
  Candidates c = make(logits_for({0.05, 0.5, 0.15, 0.3}));
  min_p(c, 0.25f, 0);
  EXPECT_EQ(id_set(c), (V{1, 2, 3}));
}

TEST(MinP, ZeroIsNoCutAndOneKeepsTheMaxima) {
  Candidates c = make({1.0f, 3.0f, 3.0f, 0.0f});
  min_p(c, 0.0f, 0);
  EXPECT_EQ(c.size(), 4u);
  min_p(c, 1.0f, 0);
  EXPECT_EQ(id_set(c), (V{1, 2}));
}

TEST(MinP, AboveOneStillKeepsTheBest) {
  Candidates c = make({1.0f, 3.0f, 2.0f});
  min_p(c, 2.0f, 0);
  EXPECT_EQ(ids_in_order(c), (V{1}));
}

TEST(MinP, MinKeepFillsInLogitOrder) {
  Candidates c = make({1.0f, 9.0f, 2.0f, 0.0f});
  min_p(c, 0.9f, 3);
  EXPECT_EQ(ids_in_order(c), (V{1, 2, 0}));
}

TEST(TypicalP, KeepsTheMostTypicalMass) {
  // p = 0.5, 0.25, 0.125, 0.125: H = 1.75 ln 2 = 1.2130; -ln p = 0.693, 1.386,
  // 2.079, 2.079; |diff| = 0.520, 0.173, 0.866, 0.866. Typical order: 1 (0.25),
  // 0 (0.5), then 2, 3. Mass > 0.5 needs ids 1 and 0 (0.75).
  Candidates c = make(logits_for({0.5, 0.25, 0.125, 0.125}));
  typical_p(c, 0.5f, 0);
  EXPECT_EQ(ids_in_order(c), (V{1, 0}));
  // > 0.2 needs only id 1 (0.25).
  Candidates d = make(logits_for({0.5, 0.25, 0.125, 0.125}));
  typical_p(d, 0.2f, 0);
  EXPECT_EQ(ids_in_order(d), (V{1}));
}

TEST(TypicalP, OneIsNoCutZeroKeepsOne) {
  Candidates c = make(logits_for({0.5, 0.25, 0.125, 0.125}));
  typical_p(c, 1.0f, 0);
  EXPECT_EQ(c.size(), 4u);
  typical_p(c, 0.0f, 0);
  EXPECT_EQ(ids_in_order(c), (V{1}));
}

TEST(TypicalP, AllEqualKeepsByMassInIdOrder) {
  // Uniform: every candidate is exactly typical; > 0.5 of 4 needs 3.
  Candidates c = make(std::vector<float>(4, 0.0f));
  typical_p(c, 0.5f, 0);
  EXPECT_EQ(ids_in_order(c), (V{0, 1, 2}));
}

TEST(TopNSigma, KeepsWithinNSigmasOfTheMax) {
  // logits 0, 0, 0, 4: mean 1, sigma sqrt((1+1+1+9)/4) = sqrt(3) = 1.732.
  // n = 1: floor 4 - 1.732 = 2.27 -> only id 3. n = 3: floor -1.2 -> all.
  Candidates c = make({0.0f, 0.0f, 0.0f, 4.0f});
  top_n_sigma(c, 1.0f);
  EXPECT_EQ(id_set(c), (V{3}));
  Candidates d = make({0.0f, 0.0f, 0.0f, 4.0f});
  top_n_sigma(d, 3.0f);
  EXPECT_EQ(d.size(), 4u);
}

TEST(TopNSigma, IgnoresMinusInfinityInTheStatistics) {
  // Finite logits 0 and 2: mean 1, sigma 1; n = 0.5 -> floor 1.5 -> id 1.
  Candidates c = make({0.0f, -kInf, 2.0f});
  top_n_sigma(c, 0.5f);
  EXPECT_EQ(id_set(c), (V{2}));
}

TEST(TopNSigma, OffAndAllEqual) {
  Candidates c = make({0.0f, 1.0f, 2.0f});
  top_n_sigma(c, -1.0f);
  EXPECT_EQ(c.size(), 3u);
  top_n_sigma(c, 0.0f);
  EXPECT_EQ(c.size(), 3u);
  Candidates e = make({3.0f, 3.0f, 3.0f});  // sigma 0: all at the max stay
  top_n_sigma(e, 1.0f);
  EXPECT_EQ(e.size(), 3u);
}

TEST(Xtc, RemovesAllAboveThresholdButTheLeastLikely) {
  // p = 0.4, 0.3, 0.2, 0.1 with threshold 0.25: above are 0.4 and 0.3; the
  // least likely of them (0.3) stays.
  Rng rng(1, 1);
  Candidates c = make(logits_for({0.1, 0.4, 0.2, 0.3}));
  xtc(c, 1.0f, 0.25f, 0, rng);
  EXPECT_EQ(ids_in_order(c), (V{3, 2, 0}));
}

TEST(Xtc, NothingWhenOnlyOneAboveThreshold) {
  Rng rng(1, 1);
  Candidates c = make(logits_for({0.1, 0.6, 0.2, 0.1}));
  xtc(c, 1.0f, 0.25f, 0, rng);
  EXPECT_EQ(c.size(), 4u);
}

TEST(Xtc, OffCasesAndMinKeep) {
  Rng rng(1, 1);
  Candidates c = make(logits_for({0.1, 0.4, 0.2, 0.3}));
  xtc(c, 0.0f, 0.25f, 0, rng);  // probability 0
  EXPECT_EQ(c.size(), 4u);
  xtc(c, 1.0f, 0.6f, 0, rng);   // threshold > 0.5
  EXPECT_EQ(c.size(), 4u);
  xtc(c, 1.0f, 0.25f, 4, rng);  // would leave 3 < min_keep 4
  EXPECT_EQ(c.size(), 4u);
  Candidates one = make({1.0f});
  xtc(one, 1.0f, 0.1f, 0, rng);
  EXPECT_EQ(one.size(), 1u);
}

TEST(Candidates, NaNBecomesImpossible) {
  Candidates c = make({std::nanf(""), 1.0f, -kInf, 0.5f});
  EXPECT_EQ(c.items[0].logit, -kInf);
  drop_impossible(c);
  EXPECT_EQ(ids_in_order(c), (V{1, 3}));
}

TEST(Candidates, SoftmaxMatchesDefinition) {
  Candidates c = make({1.0f, 2.0f, 3.0f});
  softmax(c);
  const auto ref = test::ref_softmax({1.0, 2.0, 3.0});
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(c.items[i].p, ref[i], 1e-6);
}

TEST(Candidates, SoftmaxWithInfinities) {
  Candidates c = make({1.0f, kInf, kInf, -kInf});
  softmax(c);
  EXPECT_FLOAT_EQ(c.items[0].p, 0.0f);
  EXPECT_FLOAT_EQ(c.items[1].p, 0.5f);
  EXPECT_FLOAT_EQ(c.items[2].p, 0.5f);
  EXPECT_FLOAT_EQ(c.items[3].p, 0.0f);
  Candidates d = make({-kInf, 0.0f});
  softmax(d);
  EXPECT_FLOAT_EQ(d.items[0].p, 0.0f);
  EXPECT_FLOAT_EQ(d.items[1].p, 1.0f);
}

}  // namespace
}  // namespace ferrite::sampling
