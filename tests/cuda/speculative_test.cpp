// Speculative decoding with every layer on the GPU (runtime/speculative.h is
// backend-agnostic: the target verifies a draft in one batch through the
// same Context): greedy output is the same token for token with and without
// speculation, for a gpt2 draft of synth-llama (the draft on the GPU too),
// for stories260K as its own draft (every draft token accepted) and for
// n-gram lookup. As on the CPU (tests/runtime/speculative_test.cpp).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/model.h"
#include "runtime/offload.h"
#include "runtime/speculative.h"
#include "support/rows_as_steps.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace ferrite {
namespace {

struct Out {
  std::vector<int32_t> tokens;
  runtime::SpeculativeStats stats;
};

Out greedy(runtime::Context& ctx, const tokenizer::Tokenizer& tok, const std::string& text, int n,
           runtime::Drafter* drafter, int n_max) {
  runtime::GenerationVocab vocab(tok);
  runtime::GenerationParams p;
  p.sampling.temperature = 0;
  p.n_predict = n;
  p.ignore_eos = true;
  const std::vector<int32_t> prompt = tok.encode(text, true, true);
  runtime::Sequence seq(ctx, {});
  runtime::Generation gen(vocab, p, {.n_ctx = static_cast<int32_t>(ctx.n_ctx()), .n_ctx_train = 0}, prompt);
  std::span<const float> logits = seq.prefill(prompt);
  std::unique_ptr<runtime::Speculation> spec;
  if (drafter != nullptr) spec = std::make_unique<runtime::Speculation>(*drafter, runtime::SpeculativeParams{.n_max = n_max});
  Out o;
  while (!gen.done()) {
    for (const auto& s : runtime::generation_steps(seq, gen, logits, spec.get())) {
      if (s.token >= 0) o.tokens.push_back(s.token);
    }
  }
  if (spec) o.stats = spec->stats();
  return o;
}

const std::vector<std::string> kPrompts = {"The quick brown fox", "Once upon a time there was",
                                           "int main(void) { return 0; }"};

runtime::ContextParams on_gpu() { return {.n_ctx = 256, .n_threads = 2, .n_gpu_layers = runtime::kAllLayers}; }

TEST(CudaSpeculative, DraftModelGivesTheSameGreedyTokens) {
  FERRITE_SHARED_FILE(llama, "models/synth/synth-llama-f32.gguf");
  FERRITE_SHARED_FILE(gpt2, "models/synth/synth-gpt2-f32.gguf");
  auto target = model::Model::load(llama.string());
  auto draft = model::Model::load(gpt2.string());
  const auto tok = tokenizer::Tokenizer::from_gguf(target->file());
  runtime::Context ctx(target, on_gpu());
  ASSERT_STREQ(ctx.backend_name(), "CUDA");
  runtime::Context dctx(draft, on_gpu());
  runtime::ModelDrafter drafter(dctx, {.p_min = 0.0f});
  for (const std::string& p : kPrompts) {
    const Out plain = greedy(ctx, tok, p, 40, nullptr, 0);
    const Out spec = greedy(ctx, tok, p, 40, &drafter, 5);
    EXPECT_EQ(spec.tokens, plain.tokens) << p;
    EXPECT_GT(spec.stats.n_drafted, 0) << p;
  }
}

TEST(CudaSpeculative, SelfDraftAndLookupGiveTheSameGreedyTokens) {
  FERRITE_SHARED_FILE(stories, "models/stories260K.gguf");
  auto model = model::Model::load(stories.string());
  const auto tok = tokenizer::Tokenizer::from_gguf(model->file());
  runtime::Context ctx(model, on_gpu());
  runtime::Context dctx(model, on_gpu());
  runtime::ModelDrafter self(dctx, {.p_min = 0.0f});
  runtime::NgramDrafter lookup({.size_n = 3, .size_m = 16});
  for (const std::string& p : kPrompts) {
    const Out plain = greedy(ctx, tok, p, 64, nullptr, 0);
    const Out with_self = greedy(ctx, tok, p, 64, &self, 8);
    EXPECT_EQ(with_self.tokens, plain.tokens) << p;
    EXPECT_GT(with_self.stats.n_drafted, 40) << p;
    EXPECT_EQ(with_self.stats.n_accepted, with_self.stats.n_drafted) << p;
    const Out with_lookup = greedy(ctx, tok, p, 64, &lookup, 16);
    EXPECT_EQ(with_lookup.tokens, plain.tokens) << p;
  }
}

// A verification batch's rows are the logits of the tokens' one-token steps
// bit for bit on the fast kernels (rows_as_steps: quantized weights, whose
// batches of 5+ rows would take the int8 mma and of 17+ cuBLAS, and whose
// 17 rows would take the tiled attention), for prompts short and long
// enough for the decode attention to split each token's cells (700: two
// chunks, a split count that changes with the range).
TEST(CudaSpeculative, VerificationRowsAreOneTokenStepsBitForBit) {
  FERRITE_SHARED_FILE(path, "models/synth/synth-llama-Q4_0.gguf");
  auto model = model::Model::load(path.string());
  runtime::Context ctx(model, {.n_ctx = 2048, .n_threads = 2, .n_gpu_layers = runtime::kAllLayers});
  ASSERT_STREQ(ctx.backend_name(), "CUDA");
  uint32_t seed = 7;
  for (const int prompt_len : {40, 700}) {
    for (const int rows : {5, 17}) {
      const test::RowsAgainstSteps r = test::rows_against_steps(ctx, prompt_len, rows, seed);
      EXPECT_EQ(r.differ, 0u) << "prompt " << prompt_len << ", " << rows << " rows: largest difference " << r.worst;
      // The shape's own kernels, for comparison (what rows_as_steps changes).
      const test::RowsAgainstSteps own = test::rows_against_steps(ctx, prompt_len, rows, seed, false);
      std::printf("prompt %d, %d rows as one batch: %zu of %zu logits differ from the steps' (largest %.3g)\n",
                  prompt_len, rows, own.differ, own.n_logits, own.worst);
      ++seed;
    }
  }
  // And through speculation: a quantized model as its own draft.
  const auto tok = tokenizer::Tokenizer::from_gguf(model->file());
  runtime::Context dctx(model, {.n_ctx = 2048, .n_threads = 2, .n_gpu_layers = runtime::kAllLayers});
  runtime::ModelDrafter self(dctx, {.p_min = 0.0f});
  for (const std::string& p : kPrompts) {
    ctx.remove_range(0, 0, -1);
    const Out plain = greedy(ctx, tok, p, 48, nullptr, 0);
    const Out with_self = greedy(ctx, tok, p, 48, &self, 6);
    EXPECT_EQ(with_self.tokens, plain.tokens) << p;
    EXPECT_EQ(with_self.stats.n_accepted, with_self.stats.n_drafted) << p;
  }
}

}  // namespace
}  // namespace ferrite
