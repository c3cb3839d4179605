// Temperature and dynamic temperature against their definitions.
#include <gtest/gtest.h>

#include <cmath>

#include "sampling/temperature.h"
#include "test_util.h"

namespace ferrite::sampling {
namespace {
using test::logits_for;
using test::make;

TEST(Temperature, DividesLogits) {
  Candidates c = make({1.0f, -2.0f, 4.0f});
  temperature(c, 2.0f);
  EXPECT_FLOAT_EQ(c.items[0].logit, 0.5f);
  EXPECT_FLOAT_EQ(c.items[1].logit, -1.0f);
  EXPECT_FLOAT_EQ(c.items[2].logit, 2.0f);
}

TEST(Temperature, ZeroOrNegativeIsGreedy) {
  Candidates c = make({1.0f, 4.0f, 4.0f, 2.0f});
  temperature(c, 0.0f);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c.items[0].id, 1);  // lowest id among the maxima
  Candidates d = make({1.0f, 0.0f, 3.0f});
  temperature(d, -1.0f);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.items[0].id, 2);
}

TEST(DynamicTemperature, UniformDistributionGetsTheMaximum) {
  Candidates c = make({0.0f, 0.0f, 0.0f, 0.0f});
  EXPECT_FLOAT_EQ(dynamic_temperature(c, 1.0f, 0.5f, 1.0f), 1.5f);
}

TEST(DynamicTemperature, FollowsTheEntropyFormula) {
  // p = 0.5, 0.25, 0.125, 0.125: H = 1.75 ln 2, Hmax = ln 4, H/Hmax = 0.875.
  // exponent 2: T = 0.5 + (1.5 - 0.5) * 0.875^2 = 1.265625.
  Candidates c = make(logits_for({0.5, 0.25, 0.125, 0.125}));
  const float l0 = c.items[0].logit;
  const float t = dynamic_temperature(c, 1.0f, 0.5f, 2.0f);
  EXPECT_NEAR(t, 1.265625f, 1e-5);
  EXPECT_NEAR(c.items[0].logit, l0 / 1.265625f, 1e-5);
}

TEST(DynamicTemperature, LowerBoundIsZero) {
  // A near-certain distribution has entropy ~0: T ~ max(0, 0.3 - 0.5) = 0 ->
  // greedy.
  Candidates c = make({0.0f, -100.0f, -100.0f});
  const float t = dynamic_temperature(c, 0.3f, 0.5f, 1.0f);
  EXPECT_LT(t, 1e-3f);
  EXPECT_GE(t, 0.0f);
}

TEST(DynamicTemperature, OffAndSingleCandidate) {
  Candidates c = make({1.0f, 2.0f});
  EXPECT_FLOAT_EQ(dynamic_temperature(c, 2.0f, 0.0f, 1.0f), 2.0f);
  EXPECT_FLOAT_EQ(c.items[1].logit, 1.0f);
  Candidates one = make({3.0f});
  EXPECT_FLOAT_EQ(dynamic_temperature(one, 2.0f, 1.0f, 1.0f), 2.0f);
  EXPECT_FLOAT_EQ(one.items[0].logit, 3.0f);
}

}  // namespace
}  // namespace ferrite::sampling
