// tokenizer::rank_pair, the (query, document) pair a reranker scores, on the
// shared vocabularies: a WordPiece one (bge's bert vocabulary) gets BERT's
// [CLS] q [SEP] d [SEP] with the document's segment id 1 where the model has
// two token types; llama-spm's, without a separator token, can make no pair
// and is refused with a typed error. (The other layout, llama-server's BOS q
// EOS SEP d EOS, is checked token for token against llama.cpp's golden in
// tests/model/reranker_test.cpp.)
#include <gtest/gtest.h>

#include "core/error.h"
#include "golden_support.h"
#include "support/test_data.h"
#include "tokenizer/rank_pair.h"

namespace ferrite::test {
namespace {

TEST(RankPair, WordPieceGetsBertsPairWithSegmentIds) {
  FERRITE_SHARED_FILE(path, vocab_rel("bert-bge"));
  const tokenizer::Tokenizer& tok = load_vocab(path);
  const tokenizer::Vocab& v = tok.vocab();
  ASSERT_EQ(tokenizer::rank_pair_layout(v), tokenizer::PairLayout::Bert);
  ASSERT_EQ(v.text[static_cast<size_t>(v.bos)], "[CLS]");
  ASSERT_EQ(v.text[static_cast<size_t>(v.sep)], "[SEP]");
  const std::vector<int32_t> q = tok.encode("what is a ferrite core?", false, true);
  const std::vector<int32_t> d = tok.encode("A ferrite core is a magnetic core made of ferrite.", false, true);
  ASSERT_FALSE(q.empty());
  ASSERT_FALSE(d.empty());
  const tokenizer::RankPair p =
      tokenizer::rank_pair(tok, q, "A ferrite core is a magnetic core made of ferrite.", 2);
  std::vector<int32_t> want = {v.bos};
  want.insert(want.end(), q.begin(), q.end());
  want.push_back(v.sep);
  const size_t n_first = want.size();
  want.insert(want.end(), d.begin(), d.end());
  want.push_back(v.sep);
  EXPECT_EQ(p.tokens, want);
  ASSERT_EQ(p.types.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(p.types[i], i < n_first ? 0 : 1) << i;
  // A model of one token type (or none) is given no types.
  EXPECT_TRUE(tokenizer::rank_pair(tok, q, "a document", 1).types.empty());
  EXPECT_TRUE(tokenizer::rank_pair(tok, q, "a document", 0).types.empty());
  // An empty document is still a pair: [CLS] q [SEP] [SEP], the last [SEP] type 1.
  const tokenizer::RankPair empty = tokenizer::rank_pair(tok, q, "", 2);
  ASSERT_EQ(empty.tokens.size(), q.size() + 3);
  EXPECT_EQ(empty.types.back(), 1);
  EXPECT_EQ(empty.types[q.size() + 1], 0);
}

TEST(RankPair, VocabularyWithoutSeparatorIsRefused) {
  FERRITE_SHARED_FILE(path, vocab_rel("llama-spm"));
  const tokenizer::Tokenizer& tok = load_vocab(path);
  ASSERT_EQ(tok.vocab().sep, tokenizer::kNoToken);
  EXPECT_EQ(tokenizer::rank_pair_layout(tok.vocab()), tokenizer::PairLayout::None);
  EXPECT_NE(tokenizer::rank_pair_missing(tok.vocab()).find("SEP"), std::string::npos);
  const std::vector<int32_t> q = tok.encode("query", false, true);
  EXPECT_THROW(tokenizer::rank_pair(tok, q, "document", 1), InvalidArgument);
}

}  // namespace
}  // namespace ferrite::test
