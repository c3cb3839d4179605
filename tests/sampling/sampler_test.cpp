// The whole chain: greedy, order, constraints, errors, determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <thread>

#include "core/error.h"
#include "sampling/sampler.h"

namespace ferrite::sampling {
namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

// Only the chain's random parts and the given stages: everything else off.
SamplerParams plain(uint64_t seed = 1) {
  SamplerParams p;
  p.seed = seed;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.temperature = 1.0f;
  return p;
}

std::vector<float> some_logits(size_t n, uint32_t salt) {
  std::vector<float> l(n);
  for (size_t i = 0; i < n; ++i) l[i] = std::sin(static_cast<float>(i * 7 + salt)) * 3.0f;
  return l;
}

TEST(Sampler, ArgmaxPicksLowestIndexAmongEquals) {
  const std::vector<float> l = {1.0f, 5.0f, 5.0f, 2.0f};
  EXPECT_EQ(argmax(l), 1);
  EXPECT_THROW(argmax({}), InvalidArgument);
}

TEST(Sampler, ZeroTemperatureIsGreedyWhateverTheSeed) {
  SamplerParams p;
  p.temperature = 0.0f;
  const auto l = some_logits(300, 3);
  for (uint64_t seed : {0ull, 1ull, 99ull}) {
    p.seed = seed;
    Sampler s(p);
    EXPECT_EQ(s.sample(l), argmax(l));
  }
}

// Greedy sampling skips the candidate list when no stage can move the best
// token; a zero logit bias forces the whole chain, which must agree (ties to
// the lowest id, NaN and -inf never chosen, +inf first).
TEST(Sampler, GreedyShortcutEqualsTheWholeChain) {
  SamplerParams fast;  // the default chain, greedy
  fast.temperature = 0.0f;
  SamplerParams chain = fast;
  chain.logit_bias.push_back({0, 0.0f});
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> value(-4, 4), special(0, 20);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> l(static_cast<size_t>(1 + trial % 97));
    for (float& x : l) {
      const int k = special(rng);
      x = k == 0 ? std::nanf("") : k == 1 ? -kInf : k == 2 && trial % 5 == 0 ? kInf : static_cast<float>(value(rng));
    }
    Sampler a(fast), b(chain);
    bool a_threw = false, b_threw = false;
    int32_t ta = -1, tb = -1;
    try {
      ta = a.sample(l);
    } catch (const InvalidArgument&) {
      a_threw = true;
    }
    try {
      tb = b.sample(l);
    } catch (const InvalidArgument&) {
      b_threw = true;
    }
    ASSERT_EQ(a_threw, b_threw) << "trial " << trial;
    ASSERT_EQ(ta, tb) << "trial " << trial;
    if (!a_threw) {
      ASSERT_EQ(a.last_candidates().items.size(), 1u);
      EXPECT_EQ(a.last_candidates().items[0].id, ta);
    }
  }
  Sampler a(fast);
  EXPECT_THROW(a.choose(std::vector<float>{-kInf, std::nanf("")}), InvalidArgument);
}

TEST(Sampler, PenaltiesSeeThePrompt) {
  SamplerParams p = plain();
  p.temperature = 0.0f;
  p.penalty_repeat = 2.0f;
  Sampler s(p, {.n_vocab = 3});
  const std::vector<float> l = {1.0f, 1.5f, 0.2f};
  Sampler fresh(p, {.n_vocab = 3});
  EXPECT_EQ(fresh.choose(l), 1);
  s.accept(1, false);  // 1.5 / 2 = 0.75 < 1
  EXPECT_EQ(s.choose(l), 0);
}

TEST(Sampler, OrderOfStagesMatters) {
  // min_p 0.5 cuts token 1 (ratio e^-1) unless temperature 4 runs first
  // (ratio e^-0.25).
  const std::vector<float> l = {0.0f, -1.0f};
  SamplerParams a = plain(5);
  a.min_p = 0.5f;
  a.temperature = 4.0f;
  a.samplers = {Stage::MinP, Stage::Temperature};
  SamplerParams b = a;
  b.samplers = {Stage::Temperature, Stage::MinP};
  Sampler sa(a), sb(b);
  int ones_a = 0, ones_b = 0;
  for (int i = 0; i < 200; ++i) {
    ones_a += sa.sample(l) == 1;
    ones_b += sb.sample(l) == 1;
  }
  EXPECT_EQ(ones_a, 0);
  EXPECT_GT(ones_b, 0);
}

TEST(Sampler, NaNAndMinusInfinityAreNeverChosen) {
  SamplerParams p = plain(3);
  p.temperature = 100.0f;  // nearly uniform over the possible ones
  Sampler s(p);
  const std::vector<float> l = {std::nanf(""), 0.0f, -kInf, 0.0f};
  for (int i = 0; i < 500; ++i) {
    const int32_t t = s.sample(l);
    EXPECT_TRUE(t == 1 || t == 3) << t;
  }
}

TEST(Sampler, NothingPossibleIsAnError) {
  Sampler s(plain());
  EXPECT_THROW(s.choose(std::vector<float>{-kInf, -kInf}), InvalidArgument);
  EXPECT_THROW(s.choose(std::vector<float>{std::nanf(""), std::nanf("")}), InvalidArgument);
  EXPECT_THROW(s.choose(std::vector<float>{}), InvalidArgument);
}

TEST(Sampler, SingleCandidate) {
  SamplerParams p;  // the full default chain
  p.seed = 4;
  Sampler s(p);
  EXPECT_EQ(s.sample(std::vector<float>{0.3f}), 0);
}

TEST(Sampler, LogitBiasBansAndForces) {
  SamplerParams p = plain(9);
  p.logit_bias = {{0, -kInf}, {2, 50.0f}};
  Sampler s(p, {.n_vocab = 3});
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(std::vector<float>{10.0f, 0.0f, 0.0f}), 2);
  p.logit_bias = {{3, 1.0f}};
  EXPECT_THROW(Sampler(p, {.n_vocab = 3}), InvalidArgument);
}

TEST(Sampler, ConstructionErrors) {
  SamplerParams p = plain();
  p.penalty_last_n = -1;
  EXPECT_THROW(Sampler{p}, InvalidArgument);  // context size unknown
  EXPECT_NO_THROW(Sampler(p, {.n_ctx = 128}));
  SamplerParams d = plain();
  d.dry_multiplier = 0.8f;
  EXPECT_THROW(Sampler{d}, InvalidArgument);  // string breakers, no pieces
  d.dry_sequence_breakers.clear();
  EXPECT_NO_THROW(Sampler{d});
  SamplerParams n = plain();
  n.temperature = std::nanf("");
  EXPECT_THROW(Sampler{n}, InvalidArgument);
}

// Allows even token ids only; counts what it is told.
class EvenOnly : public Constraint {
 public:
  void apply(std::span<Candidate> c) override {
    ++applied;
    for (Candidate& x : c) {
      if (x.id % 2) x.logit = -kInf;
    }
  }
  void accept(int32_t token) override { accepted.push_back(token); }
  void reset() override { accepted.clear(); }
  int applied = 0;
  std::vector<int32_t> accepted;
};

TEST(Sampler, ConstraintMasksCandidates) {
  const auto l = some_logits(101, 5);
  for (bool first : {false, true}) {
    Sampler s(plain(11));
    auto c = std::make_shared<EvenOnly>();
    s.set_constraint(c, first);
    for (int i = 0; i < 300; ++i) {
      const int32_t t = s.sample(l);
      ASSERT_EQ(t % 2, 0);
    }
    EXPECT_EQ(c->accepted.size(), 300u);
    s.accept(7, false);  // prompt tokens need not reach the constraint
    EXPECT_EQ(c->accepted.size(), 300u);
  }
}

TEST(Sampler, ConstraintWithGreedyPicksTheBestAllowed) {
  SamplerParams p = plain();
  p.temperature = 0.0f;
  Sampler s(p);
  s.set_constraint(std::make_shared<EvenOnly>());
  EXPECT_EQ(s.choose(std::vector<float>{1.0f, 9.0f, 3.0f, 8.0f}), 2);
  s.set_constraint(nullptr);
  EXPECT_EQ(s.choose(std::vector<float>{1.0f, 9.0f, 3.0f, 8.0f}), 1);
}

TEST(Sampler, ConstraintDisallowingEverythingIsAnError) {
  Sampler s(plain());
  s.set_constraint(std::make_shared<EvenOnly>(), true);
  EXPECT_THROW(s.choose(std::vector<float>{-kInf, 1.0f, std::nanf(""), 4.0f}), InvalidArgument);
}

// A chain with every stage active, random ones included.
SamplerParams everything(uint64_t seed) {
  SamplerParams p;
  p.seed = seed;
  p.top_k = 50;
  p.top_p = 0.9f;
  p.min_p = 0.02f;
  p.typical_p = 0.95f;
  p.top_n_sigma = 3.0f;
  p.xtc_probability = 0.5f;
  p.xtc_threshold = 0.05f;
  p.dynatemp_range = 0.3f;
  p.penalty_repeat = 1.1f;
  p.penalty_freq = 0.1f;
  p.penalty_present = 0.1f;
  p.dry_multiplier = 0.8f;
  p.dry_sequence_breakers.clear();
  return p;
}

std::vector<int32_t> run(const SamplerParams& p, int n) {
  Sampler s(p, {.n_vocab = 200, .n_ctx = 512});
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(s.sample(some_logits(200, static_cast<uint32_t>(i % 13))));
  return out;
}

TEST(Sampler, SameSeedSameSequence) {
  for (int mirostat : {0, 1, 2}) {
    SamplerParams p = everything(1234);
    p.mirostat = mirostat;
    const auto a = run(p, 400);
    EXPECT_EQ(a, run(p, 400)) << "mirostat " << mirostat;
    p.seed = 1235;
    EXPECT_NE(a, run(p, 400)) << "mirostat " << mirostat;
  }
}

TEST(Sampler, ResetRestartsTheSequence) {
  Sampler s(everything(77), {.n_vocab = 200, .n_ctx = 512});
  std::vector<int32_t> first, second;
  for (int i = 0; i < 100; ++i) first.push_back(s.sample(some_logits(200, static_cast<uint32_t>(i % 5))));
  s.reset();
  for (int i = 0; i < 100; ++i) second.push_back(s.sample(some_logits(200, static_cast<uint32_t>(i % 5))));
  EXPECT_EQ(first, second);
}

TEST(Sampler, SameSequenceOnEveryThread) {
  const auto want = run(everything(42), 300);
  std::vector<std::vector<int32_t>> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) threads.emplace_back([&, i] { got[i] = run(everything(42), 300); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

TEST(Sampler, RandomSeedIsResolved) {
  SamplerParams p = plain(kRandomSeed);
  Sampler s(p);
  EXPECT_EQ(s.params().seed, kRandomSeed);
  Sampler t(plain(5));
  EXPECT_EQ(t.seed(), 5u);
}

TEST(Sampler, MirostatMuMoves) {
  SamplerParams p = plain(8);
  p.mirostat = 2;
  Sampler s(p);
  ASSERT_TRUE(s.mirostat_mu().has_value());
  EXPECT_FLOAT_EQ(*s.mirostat_mu(), 10.0f);
  s.sample(some_logits(50, 1));
  EXPECT_NE(*s.mirostat_mu(), 10.0f);
  Sampler none(plain());
  EXPECT_FALSE(none.mirostat_mu().has_value());
}

TEST(Sampler, LastCandidatesHaveProbabilities) {
  SamplerParams p = plain(2);
  p.top_k = 3;
  Sampler s(p);
  s.choose(some_logits(20, 2));
  const Candidates& c = s.last_candidates();
  ASSERT_EQ(c.size(), 3u);
  double sum = 0.0;
  for (const Candidate& x : c.items) sum += x.p;
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST(Sampler, Describe) {
  SamplerParams p;
  p.logit_bias = {{1, 1.0f}};
  EXPECT_EQ(Sampler(p).describe(),
            "logits -> logit-bias -> penalties -> dry -> top_n_sigma -> top_k -> typ_p -> top_p -> min_p -> xtc -> "
            "temperature -> dist");
  p.mirostat = 1;
  EXPECT_EQ(Sampler(p).describe(), "logits -> logit-bias -> temperature -> mirostat-v1");
}

}  // namespace
}  // namespace ferrite::sampling
