// Log-probabilities of a step's tokens.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "sampling/logprobs.h"

namespace ferrite::sampling {
namespace {

TEST(Logprobs, MatchesLogSoftmaxDefinition) {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f};
  double z = 0;
  for (float l : logits) z += std::exp(static_cast<double>(l));
  std::vector<std::pair<int32_t, float>> top;
  const float lp = token_logprob(logits, 0, &top, 3);
  EXPECT_NEAR(lp, 1.0 - std::log(z), 1e-6);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);  // equal logits: lower id first
  EXPECT_EQ(top[1].first, 3);
  EXPECT_EQ(top[2].first, 0);
  EXPECT_NEAR(top[0].second, 3.0 - std::log(z), 1e-6);
}

}  // namespace
}  // namespace ferrite::sampling
