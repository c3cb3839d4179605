// Speculative decoding (runtime/speculative.h, drafter.h): greedy output is
// the same token for token with and without speculation, for a draft model
// of another architecture over the same vocabulary, for the target as its
// own draft (which must accept every draft token) and for n-gram lookup;
// sampled output keeps the target's distribution; the caches of target and
// draft hold exactly the accepted tokens afterwards.
#include "runtime/speculative.h"

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "model/model.h"
#include "support/rows_as_steps.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::runtime {
namespace {

struct Loaded {
  std::shared_ptr<const model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;
};

Loaded load(const std::filesystem::path& path) {
  Loaded l;
  l.model = model::Model::load(path.string());
  l.tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(l.model->file()));
  return l;
}

GenerationParams greedy(int64_t n) {
  GenerationParams p;
  p.sampling.temperature = 0;
  p.n_predict = n;
  return p;
}

struct Result {
  std::vector<int32_t> tokens;
  std::string text;
  SpeculativeStats stats;
  std::vector<int32_t> cached;  // the sequence's tokens at the end
};

// A whole generation after `prompt` in `ctx` (sequence 0), speculating with
// `drafter` when given.
Result generate(Context& ctx, const tokenizer::Tokenizer& tok, const std::vector<int32_t>& prompt,
                const GenerationParams& p, Drafter* drafter, SpeculativeParams sp = {}) {
  GenerationVocab vocab(tok);
  Sequence seq(ctx, {});
  Generation gen(vocab, p, {.n_ctx = static_cast<int32_t>(ctx.n_ctx()), .n_ctx_train = 0}, prompt);
  std::span<const float> logits = seq.prefill(prompt);
  std::unique_ptr<Speculation> spec;
  if (drafter != nullptr) spec = std::make_unique<Speculation>(*drafter, sp);
  Result r;
  while (!gen.done()) {
    for (const GenerationStep& s : generation_steps(seq, gen, logits, spec.get())) {
      if (s.token >= 0) r.tokens.push_back(s.token);
      r.text += s.text;
    }
  }
  if (spec) r.stats = spec->stats();
  r.cached = seq.cached();
  return r;
}

class SpeculativeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(llama, "models/synth/synth-llama-f32.gguf");
    FERRITE_SHARED_FILE(gpt2, "models/synth/synth-gpt2-f32.gguf");
    FERRITE_SHARED_FILE(stories, "models/stories260K.gguf");
    target_ = load(llama);
    draft_ = load(gpt2);
    stories_ = load(stories);
  }
  std::vector<std::string> prompts() const {
    return {"The quick brown fox", "Once upon a time there was", "int main(void) { return 0; }",
            "1, 2, 3, 4, 5, 6, 7, 8"};
  }
  Loaded target_, draft_, stories_;
};

TEST_F(SpeculativeTest, DraftModelGivesTheSameGreedyTokens) {
  check_draft_vocab(*target_.tok, *draft_.tok);
  Context tctx(target_.model, {.n_ctx = 256, .n_threads = 2});
  Context dctx(draft_.model, {.n_ctx = 256, .n_threads = 2});
  ModelDrafter drafter(dctx, {.p_min = 0.0f});
  int64_t drafted = 0;
  for (const std::string& text : prompts()) {
    const std::vector<int32_t> prompt = target_.tok->encode(text, true, true);
    const Result plain = generate(tctx, *target_.tok, prompt, greedy(40), nullptr);
    const Result spec = generate(tctx, *target_.tok, prompt, greedy(40), &drafter, {.n_max = 5});
    ASSERT_EQ(plain.tokens.size(), 40u) << text;
    EXPECT_EQ(spec.tokens, plain.tokens) << text;
    EXPECT_EQ(spec.text, plain.text) << text;
    drafted += spec.stats.n_drafted;
  }
  EXPECT_GT(drafted, 0);
}

TEST_F(SpeculativeTest, TargetAsItsOwnDraftAcceptsEverything) {
  for (Loaded* m : {&target_, &stories_}) {
    Context tctx(m->model, {.n_ctx = 256, .n_threads = 2});
    Context dctx(m->model, {.n_ctx = 256, .n_threads = 2});
    ModelDrafter drafter(dctx, {.p_min = 0.0f});
    for (const std::string& text : prompts()) {
      const std::vector<int32_t> prompt = m->tok->encode(text, true, true);
      GenerationParams p = greedy(48);
      p.ignore_eos = true;
      const Result plain = generate(tctx, *m->tok, prompt, p, nullptr);
      const Result spec = generate(tctx, *m->tok, prompt, p, &drafter, {.n_max = 8});
      EXPECT_EQ(spec.tokens, plain.tokens) << text;
      EXPECT_GT(spec.stats.n_drafted, 30) << text;
      EXPECT_EQ(spec.stats.n_accepted, spec.stats.n_drafted) << text;
      // 1 + 8 tokens per round: 48 tokens in ceil(47 / 9) + 1 rounds at most.
      EXPECT_LE(spec.stats.n_rounds, 7) << text;
    }
  }
}

TEST_F(SpeculativeTest, NgramLookupGivesTheSameGreedyTokensOnRepetitiveText) {
  // stories260K repeats itself within 200 greedy tokens (the shared golden),
  // so lookup finds drafts and the target accepts many of them.
  Context ctx(stories_.model, {.n_ctx = 512, .n_threads = 2});
  NgramDrafter drafter({.size_n = 3, .size_m = 16});
  const std::string text =
      "Lily was sad and didn't know what to do. She said, \"I'm sorry.\" Lily was sad and didn't know what to do. "
      "She said, \"I'm sorry.\" Lily was sad and didn't know what to do.";
  const std::vector<int32_t> prompt = stories_.tok->encode(text, true, true);
  const Result plain = generate(ctx, *stories_.tok, prompt, greedy(200), nullptr);
  const Result spec = generate(ctx, *stories_.tok, prompt, greedy(200), &drafter, {.n_max = 16});
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_GT(spec.stats.n_accepted, 20);  // 27 of 318 drafted
}

// Verification rows are the one-token steps' logits bit for bit (the CPU's
// kernels do not depend on the batch's shape, with or without
// rows_as_steps): quantized weights, whose batches take the repacked
// products, and a prompt long enough for attention over several chunks.
TEST(SpeculativeRows, VerificationRowsAreOneTokenStepsBitForBit) {
  FERRITE_SHARED_FILE(path, "models/synth/synth-llama-Q4_0.gguf");
  auto model = model::Model::load(path.string());
  runtime::Context ctx(model, {.n_ctx = 1024, .n_threads = 2});
  uint32_t seed = 11;
  for (const int prompt_len : {30, 300}) {
    for (const int rows : {5, 17}) {
      for (const bool as_steps : {true, false}) {
        const test::RowsAgainstSteps r = test::rows_against_steps(ctx, prompt_len, rows, seed, as_steps);
        EXPECT_EQ(r.differ, 0u) << "prompt " << prompt_len << ", " << rows << " rows, as steps " << as_steps
                                << ": largest difference " << r.worst;
      }
      ++seed;
    }
  }
}

TEST(NgramLookup, ProposesWhatFollowedTheLatestEarlierMatch) {
  const std::vector<int32_t> ctx = {1, 2, 3, 9, 1, 2, 3, 7, 8, 5, 1, 2, 3};
  EXPECT_EQ(ngram_lookup(ctx, 3, 4), (std::vector<int32_t>{7, 8, 5, 1}));
  EXPECT_EQ(ngram_lookup(ctx, 3, 2), (std::vector<int32_t>{7, 8}));
  EXPECT_EQ(ngram_lookup(ctx, 2, 3), (std::vector<int32_t>{7, 8, 5}));
  EXPECT_TRUE(ngram_lookup(ctx, 4, 4).empty());  // 5 1 2 3 occurs only at the end
  EXPECT_TRUE(ngram_lookup({}, 1, 4).empty());
  const std::vector<int32_t> run = {4, 4, 4};
  EXPECT_EQ(ngram_lookup(run, 2, 5), (std::vector<int32_t>{4}));
}

}  // namespace
}  // namespace ferrite::runtime
