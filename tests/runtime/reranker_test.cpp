// The Context's rank pooling: a reranker's pairs as sequences of one batch
// (rows interleaved, sequence ids not from 0) give one score each, llama.cpp
// c392e50's for the tiny bert reranker (tests/model/golden/tiny-bert-rerank.json);
// another pooling asked of the same model gives its states; rank asked of a
// model without a head is refused. Token types: the tiny transformers
// cross-encoder's pairs (tests/convert/cross_encoder_fixture.h) with their
// segment ids as sequences of one batch give transformers' scores; types a
// model has no row for, and any type given to a decoder, are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "convert/cross_encoder_fixture.h"
#include "core/error.h"
#include "model/model.h"
#include "model/tiny_bert.h"
#include "model/tiny_gpt.h"
#include "model/tiny_reranker.h"
#include "runtime/context.h"

namespace ferrite {
namespace {

constexpr double kTolerance = 1e-3;  // as tests/model/reranker_test.cpp

TEST(ContextRerank, OneScorePerSequence) {
  const test::RerankGolden g = test::load_rerank_golden(std::filesystem::path(FERRITE_SOURCE_DIR) /
                                                        "tests/model/golden/tiny-bert-rerank.json");
  ASSERT_GE(g.pairs.size(), 2u);
  const auto tiny = test::make_tiny_reranker();
  runtime::Context ctx(model::Model::load(tiny->path().string()), {.n_ctx = 256, .n_batch = 256, .n_threads = 2});
  ASSERT_EQ(ctx.pooling(), model::Pooling::Rank);
  const std::vector<int32_t>& a = g.pairs[0].tokens;
  const std::vector<int32_t>& b = g.pairs[1].tokens;
  runtime::Batch batch;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i < b.size()) batch.add(b[i], static_cast<int32_t>(i), 4, true);
    if (i < a.size()) batch.add(a[i], static_cast<int32_t>(i), 2, true);
  }
  ctx.decode(batch);
  for (const auto& [seq, want] : {std::pair{2, g.pairs[0].score_batched}, std::pair{4, g.pairs[1].score_batched}}) {
    const std::span<const float> got = ctx.embeddings(seq);
    ASSERT_EQ(got.size(), 1u) << "sequence " << seq;
    EXPECT_NEAR(got[0], want, kTolerance) << "sequence " << seq;
  }
  EXPECT_THROW(ctx.embeddings(0), InvalidArgument);        // not in the batch
  EXPECT_THROW(ctx.token_embeddings(0), InvalidArgument);  // rank keeps no states

  // The same model pooled by CLS: the first token's state, n_embd values.
  runtime::Context cls(model::Model::load(tiny->path().string()), {.n_ctx = 256, .n_threads = 1, .pooling_type = 2});
  runtime::Batch one;
  for (size_t i = 0; i < a.size(); ++i) one.add(a[i], static_cast<int32_t>(i), 0, true);
  cls.decode(one);
  EXPECT_EQ(static_cast<int64_t>(cls.embeddings(0).size()), cls.model().hparams().n_embd);
}

TEST(ContextRerank, RankNeedsAHead) {
  test::TinyBert plain(1);
  runtime::Context ctx(model::Model::load(plain.path().string()), {.n_ctx = 32, .n_threads = 1, .pooling_type = 4});
  EXPECT_THROW(ctx.pooling(), InvalidArgument);
  runtime::Batch b;
  b.add(3, 0, 0, true);
  EXPECT_THROW(ctx.decode(b), InvalidArgument);
}

TEST(ContextRerank, SegmentIdsOfPairsInOneBatch) {
  const test::CrossEncoderFixture f = test::load_cross_encoder_fixture();
  test::TempDir tmp;
  runtime::Context ctx(model::Model::load(test::convert_cross_encoder(f, tmp)),
                       {.n_ctx = 256, .n_batch = 256, .n_threads = 2});
  // Rows interleaved, sequences 1, 2, 3, each token with its segment id.
  runtime::Batch batch;
  size_t longest = 0;
  for (const auto& p : f.pairs) longest = std::max(longest, p.tokens.size());
  for (size_t i = 0; i < longest; ++i) {
    for (size_t s = 0; s < f.pairs.size(); ++s) {
      const auto& p = f.pairs[s];
      if (i >= p.tokens.size()) continue;
      batch.add(p.tokens[i], static_cast<int32_t>(i), static_cast<int>(s + 1), true, p.types[i]);
    }
  }
  ctx.decode(batch);
  for (size_t s = 0; s < f.pairs.size(); ++s) {
    const std::span<const float> got = ctx.embeddings(static_cast<int>(s + 1));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_NEAR(got[0], f.pairs[s].score, kTolerance) << f.pairs[s].document;
    // The types matter here: type 0 throughout scores otherwise.
    EXPECT_GT(std::fabs(f.pairs[s].score - f.pairs[s].score_types_0), 20 * kTolerance) << f.pairs[s].document;
  }
}

TEST(ContextRerank, TokenTypesBeyondTheModelsAreRefused) {
  // The tiny llama.cpp-layout reranker has two types: 1 is read, 2 refused.
  const auto tiny = test::make_tiny_reranker();
  runtime::Context rank(model::Model::load(tiny->path().string()), {.n_ctx = 64, .n_threads = 1});
  runtime::Batch b;
  b.add(5, 0, 0, true);
  b.add(6, 1, 0, true, 1);
  EXPECT_EQ(b.types, (std::vector<int32_t>{0, 1}));
  EXPECT_NO_THROW(rank.decode(b));
  b.add(7, 2, 0, true, 2);
  EXPECT_THROW(rank.decode(b), InvalidArgument);
  // A decoder has no token types: a type other than 0 is refused, not ignored.
  FERRITE_SHARED_FILE(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const test::TinyGpt gpt(test::tiny_gpt_config("bloom"), vocab);
  runtime::Context dec(model::Model::load(gpt.path().string()), {.n_ctx = 64, .n_threads = 1});
  runtime::Batch d;
  d.add(5, 0, 0, true, 0);
  d.add(6, 1, 0, true, 1);
  EXPECT_THROW(dec.decode(d), InvalidArgument);
  d.types[1] = 0;
  EXPECT_NO_THROW(dec.decode(d));
}

}  // namespace
}  // namespace ferrite
