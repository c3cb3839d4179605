// The bert reranker's classification head (rank pooling) against llama.cpp
// c392e50 on a tiny random model (tiny_reranker.h): the score of each (query,
// document) pair in the golden, formatted by llama-server (BOS query EOS SEP
// doc EOS), alone and all pairs as sequences of one batch; tolerance 1e-3
// absolute (scores of order one; both engines f32, GELU through the f16
// table). The head's input must be each sequence's first token: the last
// token's state through the same head misses. Files that say rank without a
// head are refused. tokenizer::rank_pair makes the golden's pairs.
//
// Regenerating tests/model/golden/tiny-bert-rerank.json (llama.cpp built
// outside the repository; a copy of the lead's golden-emb dumper with a rank
// mode, /work/peers/tools/golden-rank):
//   build/tests/test_model --gtest_also_run_disabled_tests
//       --gtest_filter='GoldenReranker.DISABLED_Write' with FERRITE_TINY_OUT=DIR
//   golden_dump -m DIR/tiny-bert.gguf -q QUERY -d DOC -d DOC ... > tiny-bert-rerank.json
// with the query and documents the golden holds (its "query", each pair's "document").
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/thread_pool.h"
#include "gguf/file.h"
#include "model/model.h"
#include "model/tiny_families.h"
#include "model/tiny_reranker.h"
#include "tokenizer/rank_pair.h"
#include "tokenizer/tokenizer.h"

namespace ferrite {
namespace {

constexpr double kTolerance = 1e-3;

test::RerankGolden golden() {
  return test::load_rerank_golden(std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden/tiny-bert-rerank.json");
}

// Scores of the sequences in one batch (seq ids 0, 1, ...; positions from 0),
// the head on the rows `first` (each sequence's first token unless told).
std::vector<float> scores(const model::Model& m, const std::vector<std::vector<int32_t>>& seqs, bool last = false) {
  std::vector<int32_t> tokens, pos, seq, rows;
  for (size_t s = 0; s < seqs.size(); ++s) {
    rows.push_back(static_cast<int32_t>(tokens.size() + (last ? seqs[s].size() - 1 : 0)));
    for (size_t i = 0; i < seqs[s].size(); ++i) {
      tokens.push_back(seqs[s][i]);
      pos.push_back(static_cast<int32_t>(i));
      seq.push_back(static_cast<int32_t>(s));
    }
  }
  const int64_t n = static_cast<int64_t>(tokens.size()), n_out = static_cast<int64_t>(rows.size());
  model::ForwardBatch fb{tokens.data(), pos.data(), n, rows.data(), n_out, seq.data()};
  fb.classify = true;
  cpu::ThreadPool pool(2);
  model::Workspace ws;
  std::vector<float> out(static_cast<size_t>(n_out));
  m.forward(fb, model::KvView{}, pool, ws, out.data());
  return out;
}

TEST(GoldenReranker, ScoresMatchLlamaCpp) {
  const test::RerankGolden g = golden();
  ASSERT_GE(g.pairs.size(), 3u);
  const auto tiny = test::make_tiny_reranker();
  auto m = model::Model::load(tiny->path().string());
  ASSERT_TRUE(m->arch().is_encoder());
  ASSERT_EQ(m->hparams().pooling, model::Pooling::Rank);
  std::vector<std::vector<int32_t>> all;
  double worst = 0, worst_batched = 0;
  for (const auto& p : g.pairs) {
    ASSERT_EQ(p.tokens[0], 1) << "the pair does not start with BOS";
    const float got = scores(*m, {p.tokens})[0];
    EXPECT_NEAR(got, p.score, kTolerance) << p.document;
    worst = std::max(worst, std::fabs(got - p.score));
    all.push_back(p.tokens);
  }
  const std::vector<float> batched = scores(*m, all);
  for (size_t i = 0; i < g.pairs.size(); ++i) {
    EXPECT_NEAR(batched[i], g.pairs[i].score_batched, kTolerance) << g.pairs[i].document << " in a batch";
    worst_batched = std::max(worst_batched, std::fabs(batched[i] - g.pairs[i].score_batched));
  }
  // The golden's scores are apart by more than the tolerance, so the order they give is a check too.
  for (size_t i = 0; i < g.pairs.size(); ++i) {
    for (size_t j = i + 1; j < g.pairs.size(); ++j) EXPECT_GT(std::fabs(g.pairs[i].score - g.pairs[j].score), 10 * kTolerance);
  }
  std::printf("  max |score error| %.3g alone, %.3g in one batch\n", worst, worst_batched);
}

// tokenizer::rank_pair (what /rerank sends) builds llama-server's pairs for
// a vocabulary that is not WordPiece, token for token as llama.cpp did for
// the golden, and gives no segment ids although the model has two types
// (llama.cpp feeds type 0).
TEST(GoldenReranker, PairTokensAreLlamaServers) {
  const test::RerankGolden g = golden();
  const auto tiny = test::make_tiny_reranker();
  const gguf::File file = gguf::File::open(tiny->path().string());
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(file);
  ASSERT_EQ(tokenizer::rank_pair_layout(tok.vocab()), tokenizer::PairLayout::BosEosSep);
  const int64_t n_types = model::Model::load(tiny->path().string())->hparams().n_token_types;
  EXPECT_EQ(n_types, 2);
  const std::vector<int32_t> q = tok.encode(g.query, false, true);
  for (const auto& p : g.pairs) {
    const tokenizer::RankPair pair = tokenizer::rank_pair(tok, q, p.document, n_types);
    EXPECT_EQ(pair.tokens, p.tokens) << p.document;
    EXPECT_TRUE(pair.types.empty()) << p.document;
  }
}

TEST(GoldenReranker, HeadReadsTheFirstToken) {
  const test::RerankGolden g = golden();
  const auto tiny = test::make_tiny_reranker();
  auto m = model::Model::load(tiny->path().string());
  double least = INFINITY;
  for (const auto& p : g.pairs) least = std::min(least, std::fabs(scores(*m, {p.tokens}, true)[0] - p.score));
  EXPECT_GT(least, 50 * kTolerance) << "the last token's state through the head meets the golden";
}

TEST(GoldenReranker, RankWithoutHeadIsRefused) {
  // bert saying pooling rank without cls tensors; an unknown pooling.
  const auto headless = test::make_tiny_reranker(false);
  EXPECT_THROW(model::Model::load(headless->path().string()), ModelError);
  const auto unknown = test::make_tiny_reranker(true, 5);
  EXPECT_THROW(model::Model::load(unknown->path().string()), ModelError);
  try {
    (void)model::Model::load(headless->path().string());
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("cls.weight"), std::string::npos) << e.what();
  }
  // The head's model with mean pooling loads and pools as any bert.
  const auto mean = test::make_tiny_reranker(true, 1);
  EXPECT_EQ(model::Model::load(mean->path().string())->hparams().pooling, model::Pooling::Mean);
}

// Writes the tiny reranker for golden_dump (see the top of this file).
TEST(GoldenReranker, DISABLED_Write) {
  const char* out = std::getenv("FERRITE_TINY_OUT");
  ASSERT_NE(out, nullptr) << "set FERRITE_TINY_OUT to a folder";
  const auto tiny = test::make_tiny_reranker();
  std::filesystem::copy_file(tiny->path(), std::filesystem::path(out) / tiny->path().filename(),
                             std::filesystem::copy_options::overwrite_existing);
}

}  // namespace
}  // namespace ferrite
