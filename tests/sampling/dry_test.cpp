// DRY on hand-made token histories, and against a brute-force reading of its
// definition on random histories.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "sampling/dry.h"
#include "test_util.h"

namespace ferrite::sampling {
namespace {
using test::make;

Dry make_dry(float mult, float base, int allowed, int last_n, DryBreakers breakers = {}) {
  return Dry(DryParams{mult, base, allowed, last_n}, std::move(breakers));
}

std::map<int32_t, int> lengths(const Dry& d) {
  return {d.repeat_lengths().begin(), d.repeat_lengths().end()};
}

// The worked example of the DRY description: context "a b c c b c y a b c".
// Emitting c would extend "a b c" (3), b would extend "c" (1), y "b c" (2).
TEST(Dry, WorkedExample) {
  constexpr int32_t a = 0, b = 1, c = 2, y = 3;
  Dry dry = make_dry(0.8f, 1.75f, 1, 64);
  for (int32_t t : {a, b, c, c, b, c, y, a, b, c}) dry.accept(t);
  Candidates cand = make({0.0f, 0.0f, 0.0f, 0.0f, 0.0f});
  dry.apply(cand);
  EXPECT_EQ(lengths(dry), (std::map<int32_t, int>{{b, 1}, {c, 3}, {y, 2}}));
  EXPECT_FLOAT_EQ(cand.items[a].logit, 0.0f);
  EXPECT_FLOAT_EQ(cand.items[b].logit, -0.8f * std::pow(1.75f, 0.0f));
  EXPECT_FLOAT_EQ(cand.items[c].logit, -0.8f * std::pow(1.75f, 2.0f));
  EXPECT_FLOAT_EQ(cand.items[y].logit, -0.8f * std::pow(1.75f, 1.0f));
  EXPECT_FLOAT_EQ(cand.items[4].logit, 0.0f);
}

TEST(Dry, AllowedLengthFiltersShortRepeats) {
  Dry dry = make_dry(1.0f, 2.0f, 2, 64);
  for (int32_t t : {0, 1, 2, 2, 1, 2, 3, 0, 1, 2}) dry.accept(t);
  Candidates cand = make({0.0f, 0.0f, 0.0f, 0.0f});
  dry.apply(cand);
  EXPECT_EQ(lengths(dry), (std::map<int32_t, int>{{2, 3}, {3, 2}}));
  EXPECT_FLOAT_EQ(cand.items[1].logit, 0.0f);
  EXPECT_FLOAT_EQ(cand.items[2].logit, -2.0f);  // 1 * 2^(3-2)
  EXPECT_FLOAT_EQ(cand.items[3].logit, -1.0f);  // 1 * 2^0
}

TEST(Dry, SingleTokenBreakerIsNeverPenalized) {
  // x y z x y: emitting z would extend "x y" (2), but z is a breaker.
  Dry with = make_dry(1.0f, 2.0f, 2, 64, dry_breakers_from_tokens({{2}}));
  Dry without = make_dry(1.0f, 2.0f, 2, 64);
  for (int32_t t : {0, 1, 2, 0, 1}) {
    with.accept(t);
    without.accept(t);
  }
  Candidates c1 = make({0.0f, 0.0f, 0.0f});
  Candidates c2 = make({0.0f, 0.0f, 0.0f});
  with.apply(c1);
  without.apply(c2);
  EXPECT_FLOAT_EQ(c2.items[2].logit, -1.0f);
  EXPECT_FLOAT_EQ(c1.items[2].logit, 0.0f);
}

TEST(Dry, MultiTokenBreakerLimitsTheRepeatLength) {
  // 0 1 5 6 0 1 5 6 0 1: emitting 5 would extend "0 1 5 6 0 1" (6), but the
  // breaker "5 6" occurs 2 tokens from the end, so repeats count at most 2.
  const std::vector<int32_t> seq = {0, 1, 5, 6, 0, 1, 5, 6, 0, 1};
  Dry plain = make_dry(1.0f, 2.0f, 1, 64);
  Dry broken = make_dry(1.0f, 2.0f, 1, 64, dry_breakers_from_tokens({{5, 6}}));
  for (int32_t t : seq) {
    plain.accept(t);
    broken.accept(t);
  }
  Candidates c1 = make(std::vector<float>(7, 0.0f));
  Candidates c2 = make(std::vector<float>(7, 0.0f));
  plain.apply(c1);
  broken.apply(c2);
  EXPECT_EQ(plain.repeat_lengths().at(5), 6);
  EXPECT_EQ(broken.repeat_lengths().at(5), 2);
  EXPECT_FLOAT_EQ(c2.items[5].logit, -2.0f);  // 2^(2-1)
}

TEST(Dry, BreakerAsMostRecentTokenStopsEverything) {
  Dry dry = make_dry(1.0f, 2.0f, 1, 64, dry_breakers_from_tokens({{9}}));
  for (int32_t t : {0, 1, 0, 1, 9}) dry.accept(t);
  Candidates c = make(std::vector<float>(10, 0.0f));
  dry.apply(c);
  EXPECT_TRUE(dry.repeat_lengths().empty());
  for (const Candidate& x : c.items) EXPECT_FLOAT_EQ(x.logit, 0.0f);
}

TEST(Dry, WindowLimitsTheHistory) {
  // With a window of 3 only "2 0 1" is seen: no earlier repeat.
  Dry dry = make_dry(1.0f, 2.0f, 1, 3);
  for (int32_t t : {0, 1, 2, 0, 1}) dry.accept(t);
  Candidates c = make(std::vector<float>(3, 0.0f));
  dry.apply(c);
  EXPECT_TRUE(dry.repeat_lengths().empty());
}

TEST(Dry, DisabledCases) {
  for (Dry dry : {make_dry(0.0f, 2.0f, 1, 64), make_dry(1.0f, 0.5f, 1, 64), make_dry(1.0f, 2.0f, 1, 0)}) {
    for (int32_t t : {0, 1, 0, 1}) dry.accept(t);
    Candidates c = make({0.0f, 0.0f});
    dry.apply(c);
    EXPECT_FLOAT_EQ(c.items[0].logit, 0.0f);
    EXPECT_FALSE(dry.active());
  }
}

TEST(Dry, ExponentIsCappedToStayFinite) {
  // 300 equal tokens: emitting another extends a repeat of 299. With base 2
  // the exponent is capped at floor(ln(FLT_MAX) / ln 2) = 127.
  Dry dry = make_dry(1.0f, 2.0f, 2, 1000);
  for (int i = 0; i < 300; ++i) dry.accept(0);
  Candidates c = make({0.0f});
  dry.apply(c);
  EXPECT_EQ(dry.repeat_lengths().at(0), 299);
  EXPECT_TRUE(std::isfinite(c.items[0].logit));
  EXPECT_FLOAT_EQ(c.items[0].logit, -std::ldexp(1.0f, 127));
}

TEST(DryBreakers, FromStrings) {
  TokenText text;
  text.pieces = {"a", "b", ":", "x:", "\n", "ab", "c", "xa"};
  text.tokenize = [](std::string_view s) {
    std::vector<int32_t> out;
    for (char ch : s) out.push_back(ch == 'a' ? 0 : ch == 'b' ? 1 : 6);
    return out;
  };
  const DryBreakers colon = dry_breakers_from_strings({":"}, text);
  ASSERT_EQ(colon.size(), 2u);
  EXPECT_TRUE(colon.count(2) == 1 && colon.find(2)->second.empty());
  EXPECT_TRUE(colon.count(3) == 1 && colon.find(3)->second.empty());

  // "ab": whole in token 5; "a" (0) and "xa" (7) end with its prefix "a",
  // so they are heads with the tail tokenize("b") = [1].
  const DryBreakers ab = dry_breakers_from_strings({"ab"}, text);
  ASSERT_EQ(ab.size(), 3u);
  EXPECT_TRUE(ab.find(5)->second.empty());
  EXPECT_EQ(ab.find(0)->second, (std::vector<int32_t>{1}));
  EXPECT_EQ(ab.find(7)->second, (std::vector<int32_t>{1}));

  TokenText no_tokenizer{text.pieces, nullptr};
  const DryBreakers whole_only = dry_breakers_from_strings({"ab", ""}, no_tokenizer);
  ASSERT_EQ(whole_only.size(), 1u);
  EXPECT_EQ(whole_only.begin()->first, 5);
}

TEST(DryBreakers, LongBreakerIsCutTo40Bytes) {
  TokenText text;
  text.pieces = {std::string(40, 'q')};
  EXPECT_EQ(dry_breakers_from_strings({std::string(50, 'q')}, text).size(), 1u);
}

// Brute force straight from the definition: for every earlier end position
// e, the longest common suffix of t[0..e] and the whole context, capped by
// the tokens after the most recent breaker, credited to t[e + 1].
std::map<int32_t, int> brute_lengths(const std::vector<int32_t>& t, int allowed, int32_t breaker) {
  const int n = static_cast<int>(t.size());
  int limit = n;
  for (int i = 0; i < n; ++i) {
    if (t[static_cast<size_t>(n - 1 - i)] == breaker) {
      limit = i;
      break;
    }
  }
  std::map<int32_t, int> out;
  if (n <= allowed || limit < allowed) return out;
  for (int e = 0; e + 1 < n; ++e) {
    int len = 0;
    while (len <= e && t[static_cast<size_t>(e - len)] == t[static_cast<size_t>(n - 1 - len)]) ++len;
    len = std::min(len, limit);
    if (len < allowed) continue;
    int& best = out[t[static_cast<size_t>(e + 1)]];
    best = std::max(best, len);
  }
  return out;
}

TEST(Dry, MatchesBruteForceOnRandomHistories) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 400; ++trial) {
    const int alphabet = 2 + trial % 3;
    const int n = 1 + static_cast<int>(rng() % 60);
    const int allowed = static_cast<int>(rng() % 4);
    const int32_t breaker = trial % 2 ? alphabet - 1 : -1;
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<unsigned>(alphabet));
    DryBreakers br;
    if (breaker >= 0) br = dry_breakers_from_tokens({{breaker}});
    Dry dry = make_dry(1.0f, 1.5f, allowed, 1000, br);
    for (int32_t x : t) dry.accept(x);
    Candidates c = make(std::vector<float>(static_cast<size_t>(alphabet), 0.0f));
    dry.apply(c);
    const auto want = brute_lengths(t, allowed, breaker);
    ASSERT_EQ(lengths(dry), want) << "trial " << trial;
    for (const Candidate& x : c.items) {
      auto it = want.find(x.id);
      const bool penalized = it != want.end() && x.id != breaker;
      const float expect = penalized ? -static_cast<float>(std::pow(1.5, it->second - allowed)) : 0.0f;
      ASSERT_FLOAT_EQ(x.logit, expect) << "trial " << trial << " token " << x.id;
    }
  }
}

}  // namespace
}  // namespace ferrite::sampling
