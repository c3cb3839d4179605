// Internal: the per-model encoders that turn one run of ordinary text (no
// special tokens) into ids, appending to `out`. Each is built once from the
// vocabulary; encode() is const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/string_map.h"
#include "tokenizer/vocab.h"

namespace ferrite::tokenizer {

// SentencePiece-style BPE over token scores with byte fallback. `text` is
// already escaped (spaces replaced by U+2581).
//
// Speed: when no vocabulary token holds "X▁" with X another character, no
// merge can cross the start of a "▁" that follows a non-"▁" character, so
// the text is cut there into segments encoded independently (and cached).
class SpmEncoder {
 public:
  explicit SpmEncoder(const Vocab& v);
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  void encode_segment(std::string_view text, std::vector<int32_t>& out) const;
  const Vocab& v_;
  int32_t byte_token_[256];
  // Characters X such that some token contains X followed by "▁".
  std::unordered_set<std::string> joins_space_;
};

// Byte-level BPE (GPT-2 style): pre-tokenizer regexes, then rank-ordered
// merges inside each word.
class BpeEncoder {
 public:
  explicit BpeEncoder(const Vocab& v);
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  struct Merge {
    int32_t rank = -1;
    int32_t merged = kNoToken;  // id of the merged text, kNoToken when not a token
  };
  struct Symbol {
    uint32_t begin, len;  // raw bytes of the word
    int32_t id;           // token id of the encoded text, kNoToken when none
    int32_t prev, next;
  };
  void encode_word(std::string_view word, std::vector<int32_t>& out, std::vector<Symbol>& syms,
                   std::vector<uint64_t>& heap) const;
  Merge find_merge(std::string_view word, const Symbol& l, const Symbol& r) const;
  void emit_symbol(std::string_view word, const Symbol& s, std::vector<int32_t>& out) const;

  const Vocab& v_;
  PreTokenizer pre_;
  int32_t byte_token_[256];
  U64Map<Merge> merges_;                 // (left id, right id) -> merge
  std::unordered_map<std::string, int32_t> text_merges_;  // "left\0right" for non-token parts
  std::vector<std::string> raw_text_;    // token text decoded to raw bytes ("" when impossible)
  StringIdMap raw_to_id_;
};

// BERT WordPiece: normalization (lowercase, accents, punctuation and CJK
// splitting) then greedy longest-match with the U+2581 word prefix.
class WpmEncoder {
 public:
  explicit WpmEncoder(const Vocab& v) : v_(v) {}
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  const Vocab& v_;
};

// Unigram (T5): precompiled-charsmap normalization then Viterbi over scores.
class UgmEncoder {
 public:
  explicit UgmEncoder(const Vocab& v);
  ~UgmEncoder();
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The RWKV world tokenizer (rwkv.cpp): greedy longest match over a trie of
// the tokens' bytes (their GGUF text unescaped by rwkv_unescape).
class RwkvEncoder {
 public:
  explicit RwkvEncoder(const Vocab& v);
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // (byte, child) sorted by byte
    int32_t id = kNoToken;
  };
  // The child of `node` by byte c, or -1.
  int32_t child(int32_t node, uint8_t c) const;
  const Vocab& v_;
  std::vector<Node> nodes_;  // [0] is the root
};

// A token's bytes from its escaped RWKV text (rwkv.cpp).
std::string rwkv_unescape(std::string_view escaped);

}  // namespace ferrite::tokenizer
