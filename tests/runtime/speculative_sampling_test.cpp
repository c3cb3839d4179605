// Speculative sampling keeps the target's distribution (runtime/speculative.h):
// a chi-square test of the first two sampled tokens of stories260K against
// their exact probabilities under the target, over 4000 fixed seeds with a
// draft that is often rejected; for a seed, sampled output is the same with
// and without speculation; the target's cache holds exactly the accepted
// tokens after rejections; bad settings are refused with their flag's name.
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "model/model.h"
#include "runtime/speculative.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::runtime {
namespace {

// Proposes the same tokens whatever the context.
class FixedDrafter final : public Drafter {
 public:
  explicit FixedDrafter(std::vector<int32_t> tokens) : tokens_(std::move(tokens)) {}
  std::vector<int32_t> draft(std::span<const int32_t>, int n_max) override {
    return {tokens_.begin(), tokens_.begin() + std::min<size_t>(tokens_.size(), static_cast<size_t>(n_max))};
  }
  const char* name() const override { return "fixed"; }

 private:
  std::vector<int32_t> tokens_;
};

std::vector<double> softmax(std::span<const float> logits) {
  double mx = -INFINITY;
  for (float l : logits) mx = std::max(mx, static_cast<double>(l));
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp(logits[i] - mx);
  for (double& v : p) v /= sum;
  return p;
}

class SpeculativeSamplingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(stories, "models/stories260K.gguf");
    model_ = model::Model::load(stories.string());
    tok_ = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(model_->file()));
    vocab_ = std::make_unique<GenerationVocab>(*tok_);
    prompt_ = tok_->encode("Once upon a time, there was a", true, true);
  }
  // Plain softmax sampling: p is exactly softmax(logits).
  GenerationParams sampled(uint64_t seed, int64_t n) const {
    GenerationParams p;
    p.sampling.temperature = 1.0f;
    p.sampling.top_k = 0;
    p.sampling.top_p = 1.0f;
    p.sampling.min_p = 0.0f;
    p.sampling.seed = seed;
    p.n_predict = n;
    p.ignore_eos = true;
    return p;
  }
  // The tokens of one generation in `seq`, speculating with `drafter` when given.
  std::vector<int32_t> run(Sequence& seq, const GenerationParams& p, Drafter* drafter, int n_max = 4) {
    Generation gen(*vocab_, p, {.n_ctx = 256, .n_ctx_train = 256}, prompt_);
    std::span<const float> logits = seq.prefill(prompt_);
    std::unique_ptr<Speculation> spec;
    if (drafter != nullptr) spec = std::make_unique<Speculation>(*drafter, SpeculativeParams{.n_max = n_max});
    std::vector<int32_t> out;
    while (!gen.done()) {
      for (const GenerationStep& s : generation_steps(seq, gen, logits, spec.get())) {
        if (s.token >= 0) out.push_back(s.token);
      }
    }
    return out;
  }
  std::shared_ptr<const model::Model> model_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<GenerationVocab> vocab_;
  std::vector<int32_t> prompt_;
};

// The exact probability of every first two tokens (x1, x2) with p(x1) >= min_p1.
std::map<std::pair<int32_t, int32_t>, double> exact_pairs(Context& ctx, const std::vector<int32_t>& prompt,
                                                           double min_p1) {
  ctx.clear();
  const std::vector<double> p1 = softmax(ctx.eval(prompt));
  std::map<std::pair<int32_t, int32_t>, double> out;
  for (int32_t x1 = 0; x1 < static_cast<int32_t>(p1.size()); ++x1) {
    if (p1[static_cast<size_t>(x1)] < min_p1) continue;
    ctx.clear();
    std::vector<int32_t> t = prompt;
    t.push_back(x1);
    const std::vector<double> p2 = softmax(ctx.eval(t));
    for (int32_t x2 = 0; x2 < static_cast<int32_t>(p2.size()); ++x2) {
      out[{x1, x2}] = p1[static_cast<size_t>(x1)] * p2[static_cast<size_t>(x2)];
    }
  }
  ctx.clear();
  return out;
}

TEST_F(SpeculativeSamplingTest, FirstTwoTokensFollowTheTargetsDistribution) {
  Context ctx(model_, {.n_ctx = 256, .n_threads = 2});
  constexpr int kRuns = 4000;
  const auto exact = exact_pairs(ctx, prompt_, 1e-3);
  // The draft: the likeliest second token after the likeliest first one,
  // then the likeliest third after it; proposed after every first token.
  std::pair<int32_t, int32_t> best{-1, -1};
  for (const auto& [k, p] : exact) {
    if (best.first < 0 || p > exact.at(best)) best = k;
  }
  FixedDrafter drafter({best.second, best.second});
  Sequence seq(ctx, {});
  std::map<std::pair<int32_t, int32_t>, int> counts;
  for (int i = 0; i < kRuns; ++i) {
    const std::vector<int32_t> t = run(seq, sampled(1000 + static_cast<uint64_t>(i), 3), &drafter);
    ASSERT_EQ(t.size(), 3u);
    ++counts[{t[0], t[1]}];
  }
  // Cells expected at least 5 times; the rest (and pairs after an unlikely
  // first token) lumped into one.
  double chi2 = 0, rest_p = 1;
  int rest_n = kRuns, cells = 0;
  for (const auto& [k, p] : exact) {
    if (p * kRuns < 5) continue;
    const int n = counts.count(k) ? counts.at(k) : 0;
    chi2 += (n - p * kRuns) * (n - p * kRuns) / (p * kRuns);
    rest_p -= p;
    rest_n -= n;
    ++cells;
  }
  ASSERT_GT(rest_p * kRuns, 5.0);
  chi2 += (rest_n - rest_p * kRuns) * (rest_n - rest_p * kRuns) / (rest_p * kRuns);
  const double df = cells;  // cells + 1 lumped, less one
  ASSERT_GE(df, 10);
  // Wilson-Hilferty: the chi-square quantile of probability 1 - 1e-6 (z = 4.753):
  // a correct sampler fails this with probability about 1e-6 (the seeds are
  // fixed, so the outcome is too).
  const double z = 4.753, a = 2.0 / (9.0 * df);
  const double critical = df * std::pow(1 - a + z * std::sqrt(a), 3);
  EXPECT_LT(chi2, critical) << "cells " << cells;
  // The draft was both accepted and rejected often.
  const double p_draft = exact.count(best) ? exact.at(best) : 0;
  EXPECT_GT(p_draft, 0.05);
  EXPECT_LT(p_draft, 0.95);
}

TEST_F(SpeculativeSamplingTest, ASeedGivesTheSameTokensWithAndWithoutSpeculation) {
  Context ctx(model_, {.n_ctx = 256, .n_threads = 2});
  Context dctx(model_, {.n_ctx = 256, .n_threads = 2});
  ModelDrafter drafter(dctx, {.p_min = 0.0f});
  Sequence seq(ctx, {});
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const std::vector<int32_t> plain = run(seq, sampled(seed, 40), nullptr);
    const std::vector<int32_t> spec = run(seq, sampled(seed, 40), &drafter, 6);
    EXPECT_EQ(spec, plain) << "seed " << seed;
  }
}

TEST_F(SpeculativeSamplingTest, CacheHoldsExactlyTheAcceptedTokensAfterRejections) {
  Context ctx(model_, {.n_ctx = 256, .n_threads = 2});
  Sequence seq(ctx, {});
  FixedDrafter drafter({5, 6, 7, 8, 9, 10});  // rarely right: most rounds reject
  const std::vector<int32_t> out = run(seq, sampled(7, 30), &drafter);
  ASSERT_EQ(out.size(), 30u);
  const std::vector<int32_t>& cached = seq.cached();
  // The prompt and the tokens so far (the last sampled one may be pending).
  ASSERT_GE(cached.size(), prompt_.size() + 28);
  EXPECT_EQ(ctx.cache().max_pos(0) + 1, static_cast<int32_t>(cached.size()));
  EXPECT_EQ(ctx.cache().used(), static_cast<int64_t>(cached.size()));
  std::vector<int32_t> expect = prompt_;
  expect.insert(expect.end(), out.begin(), out.begin() + static_cast<long>(cached.size() - prompt_.size()));
  EXPECT_EQ(cached, expect);
  // The next logits equal those of a fresh evaluation of the same tokens.
  const int32_t next_token = out[cached.size() - prompt_.size()];
  std::span<const float> a = ctx.eval(std::vector<int32_t>{next_token});
  const std::vector<float> after(a.begin(), a.end());
  Context fresh(model_, {.n_ctx = 256, .n_threads = 2});
  std::vector<int32_t> all = cached;
  all.push_back(next_token);
  std::span<const float> b = fresh.eval(all);
  ASSERT_EQ(b.size(), after.size());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(after[i], b[i], 1e-3f) << i;
}


TEST(SpeculativeSettings, BadValuesAreRefusedNamingTheFlag) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { validate(SpeculativeParams{.n_max = -1}); }).find("--draft-max"), std::string::npos);
  EXPECT_NE(message([] { validate(SpeculativeParams{.n_max = 4, .n_min = 5}); }).find("--draft-min"),
            std::string::npos);
  EXPECT_NE(message([] { NgramDrafter d({.size_n = 0}); }).find("--spec-ngram-simple-size-n"), std::string::npos);
  EXPECT_NE(message([] { NgramDrafter d({.size_n = 2, .size_m = 5000}); }).find("--spec-ngram-simple-size-m"),
            std::string::npos);
}

TEST(SpeculativeSettings, DraftVocabularyMustMatchTheTargets) {
  FERRITE_SHARED_FILE(stories, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(llama, "models/synth/synth-llama-f32.gguf");
  FERRITE_SHARED_FILE(gpt2, "models/synth/synth-gpt2-f32.gguf");
  auto tok = [](const std::filesystem::path& p) { return tokenizer::Tokenizer::from_file(p.string()); };
  const tokenizer::Tokenizer a = tok(stories), b = tok(llama), c = tok(gpt2);
  EXPECT_NO_THROW(check_draft_vocab(b, c));
  try {
    check_draft_vocab(b, a);
    ADD_FAILURE() << "a 512-token draft vocabulary for a 4096-token target was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("by more than 128"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ferrite::runtime
