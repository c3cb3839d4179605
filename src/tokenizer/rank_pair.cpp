// A reranker's (query, document) pair: rank_pair.h.
#include "tokenizer/rank_pair.h"

#include "core/error.h"

namespace ferrite::tokenizer {

PairLayout rank_pair_layout(const Vocab& v) {
  if (v.kind == ModelKind::WPM) return v.bos != kNoToken && v.sep != kNoToken ? PairLayout::Bert : PairLayout::None;
  return v.bos != kNoToken && v.eos != kNoToken && v.sep != kNoToken ? PairLayout::BosEosSep : PairLayout::None;
}

std::string rank_pair_missing(const Vocab& v) {
  if (v.kind == ModelKind::WPM) {
    return "the WordPiece vocabulary lacks a [CLS] (BOS) or [SEP] token, which the pair [CLS] query [SEP] "
           "document [SEP] needs";
  }
  return "the vocabulary lacks a BOS, EOS or SEP token, which the rerank pair BOS query EOS SEP document EOS needs";
}

RankPair rank_pair(const Tokenizer& tok, std::span<const int32_t> query, std::string_view document,
                   int64_t n_token_types) {
  const Vocab& v = tok.vocab();
  const PairLayout layout = rank_pair_layout(v);
  if (layout == PairLayout::None) throw InvalidArgument(rank_pair_missing(v));
  RankPair p;
  std::vector<int32_t>& ids = p.tokens;
  ids.push_back(v.bos);
  ids.insert(ids.end(), query.begin(), query.end());
  if (layout == PairLayout::Bert) {
    ids.push_back(v.sep);
  } else {
    ids.push_back(v.eos);
    ids.push_back(v.sep);
  }
  const size_t first = ids.size();  // the document's first token
  tok.encode(document, /*add_special=*/false, /*parse_special=*/true, ids);
  ids.push_back(layout == PairLayout::Bert ? v.sep : v.eos);
  if (layout == PairLayout::Bert && n_token_types >= 2) {
    p.types.assign(ids.size(), 0);
    for (size_t i = first; i < ids.size(); ++i) p.types[i] = 1;
  }
  return p;
}

}  // namespace ferrite::tokenizer
