// The input a reranker (a cross-encoder: pooling rank) scores for a query and
// one document, its tokens and their types (segment ids); one builder for
// every caller (the server's /rerank). Query and document are tokenized
// without added special tokens, special tokens in them parsed (as
// llama-server c392e50). Two layouts, by vocabulary:
// - WordPiece (bert): BERT's pair, [CLS] query [SEP] document [SEP] ([CLS]
//   the vocabulary's BOS), the document and its [SEP] of type 1 when the
//   model has token types 0 and 1 (as transformers' BertTokenizer gives
//   token_type_ids, on which BERT cross-encoders such as ms-marco-MiniLM are
//   trained), else every token type 0;
// - the others: llama-server c392e50's format_rerank, BOS query EOS SEP
//   document EOS (XLM-RoBERTa's <s> q </s></s> d </s> for bge-reranker),
//   every token type 0 as llama.cpp feeds them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace ferrite::tokenizer {

enum class PairLayout {
  None,       // the vocabulary lacks a token the layout needs
  Bert,       // [CLS] q [SEP] d [SEP], segment ids 0 / 1
  BosEosSep,  // BOS q EOS SEP d EOS, every token type 0
};

PairLayout rank_pair_layout(const Vocab& v);
// For PairLayout::None: which tokens the vocabulary lacks, as a sentence.
std::string rank_pair_missing(const Vocab& v);

struct RankPair {
  std::vector<int32_t> tokens;
  std::vector<int32_t> types;  // [tokens.size()], or empty: every token type 0
};

// The pair of `query` (its tokens: encode(query, false, true), made once for
// all documents) and `document`, for a model of n_token_types token types
// (model::HParams::n_token_types; types 1 are given only where it is 2 or
// more). Throws InvalidArgument for a vocabulary of PairLayout::None.
RankPair rank_pair(const Tokenizer& tok, std::span<const int32_t> query, std::string_view document,
                   int64_t n_token_types);

}  // namespace ferrite::tokenizer
