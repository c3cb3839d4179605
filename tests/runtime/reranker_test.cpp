// The Context's rank pooling: a reranker's pairs as sequences of one batch
// (rows interleaved, sequence ids not from 0) give one score each, llama.cpp
// c392e50's for the tiny bert reranker (tests/model/golden/tiny-bert-rerank.json);
// another pooling asked of the same model gives its states; rank asked of a
// model without a head is refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "model/model.h"
#include "model/tiny_bert.h"
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

}  // namespace
}  // namespace ferrite
