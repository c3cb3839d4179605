// Logit bias and repetition penalties against their definitions.
#include <gtest/gtest.h>

#include <limits>

#include "sampling/penalties.h"
#include "test_util.h"

namespace ferrite::sampling {
namespace {
using test::make;

TEST(LogitBias, AddsAndAccumulates) {
  Candidates c = make({1.0f, 2.0f, 3.0f});
  const LogitBias biases[] = {{0, 1.5f}, {2, -1.0f}, {2, -0.5f}, {7, 100.0f}};
  apply_logit_bias(c, biases);
  EXPECT_FLOAT_EQ(c.items[0].logit, 2.5f);
  EXPECT_FLOAT_EQ(c.items[1].logit, 2.0f);
  EXPECT_FLOAT_EQ(c.items[2].logit, 1.5f);  // two biases add; id 7 is absent
}

TEST(LogitBias, WorksOnReorderedCandidates) {
  Candidates c = make({1.0f, 2.0f, 3.0f});
  std::swap(c.items[0], c.items[2]);
  const LogitBias biases[] = {{0, -std::numeric_limits<float>::infinity()}};
  apply_logit_bias(c, biases);
  EXPECT_EQ(c.items[2].id, 0);
  EXPECT_EQ(c.items[2].logit, -std::numeric_limits<float>::infinity());
  EXPECT_FLOAT_EQ(c.items[0].logit, 3.0f);
}

TEST(Penalties, RepeatFrequencyPresenceWithCounts) {
  PenaltyParams p;
  p.last_n = 64;
  p.repeat = 2.0f;
  p.frequency = 0.5f;
  p.presence = 0.25f;
  Penalties pen(p);
  for (int32_t t : {1, 1, 1, 2}) pen.accept(t);
  EXPECT_EQ(pen.count(1), 3);
  EXPECT_EQ(pen.count(2), 1);
  Candidates c = make({4.0f, 4.0f, -4.0f, 4.0f});
  pen.apply(c);
  EXPECT_FLOAT_EQ(c.items[0].logit, 4.0f);                     // unseen
  EXPECT_FLOAT_EQ(c.items[1].logit, 4.0f / 2 - 3 * 0.5f - 0.25f);   // positive: divided
  EXPECT_FLOAT_EQ(c.items[2].logit, -4.0f * 2 - 1 * 0.5f - 0.25f);  // negative: multiplied
  EXPECT_FLOAT_EQ(c.items[3].logit, 4.0f);
}

TEST(Penalties, ZeroLogitIsMultiplied) {
  PenaltyParams p;
  p.repeat = 1.5f;
  Penalties pen(p);
  pen.accept(0);
  Candidates c = make({0.0f});
  pen.apply(c);
  EXPECT_FLOAT_EQ(c.items[0].logit, 0.0f);
}

TEST(Penalties, WindowForgetsOldTokens) {
  PenaltyParams p;
  p.last_n = 3;
  p.frequency = 1.0f;
  Penalties pen(p);
  for (int32_t t : {5, 5, 6, 7, 5}) pen.accept(t);  // window: 6 7 5
  EXPECT_EQ(pen.count(5), 1);
  EXPECT_EQ(pen.count(6), 1);
  EXPECT_EQ(pen.count(7), 1);
  pen.accept(8);  // window: 7 5 8
  EXPECT_EQ(pen.count(6), 0);
  Candidates c = make(std::vector<float>(9, 0.0f));
  pen.apply(c);
  for (int32_t id = 0; id < 9; ++id) {
    const bool seen = id == 5 || id == 7 || id == 8;
    EXPECT_FLOAT_EQ(c.items[static_cast<size_t>(id)].logit, seen ? -1.0f : 0.0f) << id;
  }
}

TEST(Penalties, DisabledCases) {
  PenaltyParams off;  // repeat 1, frequency 0, presence 0
  Penalties a(off);
  a.accept(0);
  EXPECT_FALSE(a.active());
  PenaltyParams zero_window;
  zero_window.last_n = 0;
  zero_window.repeat = 2.0f;
  Penalties b(zero_window);
  b.accept(0);
  Candidates c = make({3.0f});
  b.apply(c);
  EXPECT_FLOAT_EQ(c.items[0].logit, 3.0f);
  EXPECT_EQ(b.count(0), 0);
}

TEST(Penalties, NewlineCanBeSpared) {
  PenaltyParams p;
  p.presence = 1.0f;
  p.newline_token = 1;
  p.penalize_newline = false;
  Penalties pen(p);
  pen.accept(1);
  pen.accept(2);
  Candidates c = make({0.0f, 0.0f, 0.0f});
  pen.apply(c);
  EXPECT_FLOAT_EQ(c.items[1].logit, 0.0f);
  EXPECT_FLOAT_EQ(c.items[2].logit, -1.0f);
  p.penalize_newline = true;
  Penalties pen2(p);
  pen2.accept(1);
  Candidates d = make({0.0f, 0.0f});
  pen2.apply(d);
  EXPECT_FLOAT_EQ(d.items[1].logit, -1.0f);
}

TEST(Penalties, ResetForgets) {
  PenaltyParams p;
  p.presence = 1.0f;
  Penalties pen(p);
  pen.accept(0);
  pen.reset();
  EXPECT_EQ(pen.count(0), 0);
}

}  // namespace
}  // namespace ferrite::sampling
