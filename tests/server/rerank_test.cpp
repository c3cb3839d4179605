// /rerank on a reranker: the tiny bert reranker (tests/model/tiny_reranker.h)
// served, its scores against llama.cpp c392e50's for the same query and
// documents (tests/model/golden/tiny-bert-rerank.json, made with
// llama-server's pair format), in Jina's and TEI's answer shapes; the
// embeddings routes refuse a reranker, and other models still refuse /rerank
// (compat_test.cpp). A converted transformers BERT cross-encoder (WordPiece
// vocabulary, two token types) is served with BERT's pair and segment ids,
// its scores against transformers'.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/cross_encoder_fixture.h"
#include "model/tiny_reranker.h"
#include "server_fixture.h"

namespace ferrite::server::test {
namespace {

constexpr double kTolerance = 1e-3;  // as tests/model/reranker_test.cpp

ferrite::test::RerankGolden golden() {
  return ferrite::test::load_rerank_golden(std::filesystem::path(FERRITE_SOURCE_DIR) /
                                           "tests/model/golden/tiny-bert-rerank.json");
}

ServerConfig reranker_config() {
  ServerConfig cfg;
  cfg.parallel = 1;
  cfg.n_ctx = 256;
  cfg.n_batch = 256;
  return cfg;
}

TEST(ServerRerank, ScoresMatchLlamaCppInDocumentOrder) {
  const ferrite::test::RerankGolden g = golden();
  const auto tiny = ferrite::test::make_tiny_reranker();
  TestServer srv(tiny->path().string(), reranker_config());
  Json docs = Json::array();
  int64_t want_tokens = 0;
  for (const auto& p : g.pairs) {
    docs.push_back(p.document);
    want_tokens += static_cast<int64_t>(p.tokens.size());
  }
  for (const char* path : {"/rerank", "/v1/rerank", "/reranking", "/v1/reranking"}) {
    auto [status, body] = srv.post(path, {{"query", g.query}, {"documents", docs}, {"top_n", 2}});
    ASSERT_EQ(status, 200) << path << ": " << body.dump();
    EXPECT_EQ(body["object"], "list");
    // The usage counts every pair's tokens: the pair format's BOS, EOS, SEP, EOS included.
    EXPECT_EQ(body["usage"]["prompt_tokens"], want_tokens) << path;
    const Json& results = body["results"];
    ASSERT_EQ(results.size(), g.pairs.size()) << path;
    for (size_t i = 0; i < g.pairs.size(); ++i) {
      EXPECT_EQ(results[i]["index"], i) << path;
      EXPECT_NEAR(results[i]["relevance_score"].get<double>(), g.pairs[i].score, kTolerance) << g.pairs[i].document;
    }
  }
  // The golden's scores differ by far more than the tolerance: a document out of place would be seen.
  EXPECT_GT(std::fabs(g.pairs[0].score - g.pairs[1].score), 10 * kTolerance);

  // TEI's request and answer: `texts`, [{index, score, text}].
  auto [status, tei] = srv.post("/rerank", {{"query", g.query}, {"texts", docs}, {"return_text", true}});
  ASSERT_EQ(status, 200) << tei.dump();
  ASSERT_TRUE(tei.is_array());
  ASSERT_EQ(tei.size(), g.pairs.size());
  for (size_t i = 0; i < g.pairs.size(); ++i) {
    EXPECT_EQ(tei[i]["index"], i);
    EXPECT_EQ(tei[i]["text"], g.pairs[i].document);
    EXPECT_NEAR(tei[i]["score"].get<double>(), g.pairs[i].score, kTolerance);
  }
}

// The tiny transformers cross-encoder converted by ferrite convert: its
// WordPiece vocabulary has no EOS, so llama-server's pair cannot be made
// (this answered 501 before); /rerank sends [CLS] q [SEP] d [SEP] with the
// document as type 1 and answers transformers' scores for those segment ids.
TEST(ServerRerank, BertCrossEncoderScoresMatchTransformers) {
  const ferrite::test::CrossEncoderFixture f = ferrite::test::load_cross_encoder_fixture();
  ferrite::test::TempDir tmp;
  TestServer srv(ferrite::test::convert_cross_encoder(f, tmp), reranker_config());
  Json docs = Json::array();
  int64_t want_tokens = 0;
  for (const auto& p : f.pairs) {
    docs.push_back(p.document);
    want_tokens += static_cast<int64_t>(p.tokens.size());
  }
  auto [status, body] = srv.post("/v1/rerank", {{"query", f.query}, {"documents", docs}});
  ASSERT_EQ(status, 200) << body.dump();
  EXPECT_EQ(body["usage"]["prompt_tokens"], want_tokens);  // [CLS] q [SEP] d [SEP]: no EOS, one [SEP] between
  const Json& results = body["results"];
  ASSERT_EQ(results.size(), f.pairs.size());
  for (size_t i = 0; i < f.pairs.size(); ++i) {
    const double got = results[i]["relevance_score"].get<double>();
    EXPECT_NEAR(got, f.pairs[i].score, kTolerance) << f.pairs[i].document;
    // Type 0 throughout would give another score (by 0.16 to 0.52 here).
    EXPECT_GT(std::fabs(got - f.pairs[i].score_types_0), 20 * kTolerance) << f.pairs[i].document;
  }
}

TEST(ServerRerank, RequestsCheckedAndEmbeddingsRefused) {
  const auto tiny = ferrite::test::make_tiny_reranker();
  TestServer srv(tiny->path().string(), reranker_config());
  EXPECT_EQ(srv.post("/rerank", {{"documents", {"a"}}}).first, 400);
  EXPECT_EQ(srv.post("/rerank", {{"query", "q"}, {"documents", Json::array()}}).first, 400);
  EXPECT_EQ(srv.post("/rerank", {{"query", "q"}, {"documents", {"a", 3}}}).first, 400);
  EXPECT_EQ(srv.post("/rerank", {{"query", 7}, {"documents", {"a"}}}).first, 400);
  std::string long_doc;
  for (int i = 0; i < 300; ++i) long_doc += "x ";
  auto too_long = srv.post("/rerank", {{"query", "q"}, {"documents", {"a", long_doc}}});
  EXPECT_EQ(too_long.first, 400);
  EXPECT_EQ(too_long.second["error"]["code"], "context_length_exceeded");
  for (const char* path : {"/v1/embeddings", "/embeddings"}) {
    auto [status, body] = srv.post(path, {{"input", "hello"}});
    EXPECT_EQ(status, 400) << path;
    EXPECT_EQ(body["error"]["code"], "embeddings_not_supported") << body.dump();
    EXPECT_NE(body["error"]["message"].get<std::string>().find("reranker"), std::string::npos) << body.dump();
  }
  // Still serving after the refusals.
  EXPECT_EQ(srv.post("/rerank", {{"query", "q"}, {"documents", {"a"}}}).first, 200);
}

}  // namespace
}  // namespace ferrite::server::test
