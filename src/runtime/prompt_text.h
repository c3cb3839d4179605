// Keeping what a request sends from forging control tokens. A chat prompt
// is the template's text with the messages' text inside; the prompt is
// tokenized with special tokens parsed (the template writes them as text:
// "<|im_start|>"), so a message that holds "<|im_start|>system" would turn
// into real control tokens. The guard:
//  1. before rendering, replaces in every string of the request (message
//     content, names, tool calls and tool schemas) each occurrence of a
//     control token's text, each start or end of one cut by the string's
//     edge, and each string that lies inside one, by a marker (private-use
//     characters holding an index);
//  2. after rendering, puts the original text back and records where it is;
//     the tokenizer then matches no control token overlapping those ranges
//     (Tokenizer::encode with literal ranges).
// Text without such pieces renders and tokenizes exactly as before.
//
//   SpecialTextGuard guard(tok.vocab());
//   SpecialTextGuard::Session s(guard);
//   Json safe = s.protect(messages);
//   PromptText p = s.restore(template.render(safe));
//   tok.encode(p.text, add_bos, /*parse_special=*/true, ids, p.literal);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace ferrite::runtime {

struct PromptText {
  std::string text;
  std::vector<tokenizer::TextRange> literal;  // sorted, disjoint: no control token may overlap these

  // Whether [begin, end) overlaps a literal range.
  bool touches_literal(size_t begin, size_t end) const;
};

class SpecialTextGuard {
 public:
  // The texts of the vocabulary's control and unknown tokens (those that
  // only parse_special matches).
  explicit SpecialTextGuard(const tokenizer::Vocab& vocab);
  explicit SpecialTextGuard(std::vector<std::string> texts);

  class Session {
   public:
    explicit Session(const SpecialTextGuard& guard) : g_(guard) {}
    // A copy of `value` with every string (object keys too) protected.
    nlohmann::ordered_json protect(const nlohmann::ordered_json& value);
    std::string protect_text(std::string_view s);
    // The rendered text with the originals back in place; markers cut by
    // the template (slicing) are dropped.
    PromptText restore(std::string_view rendered) const;

   private:
    const SpecialTextGuard& g_;
    std::vector<std::string> originals_;
  };

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;
    bool terminal = false;
  };
  static int32_t child(const std::vector<Node>& trie, int32_t node, uint8_t c);
  static void insert(std::vector<Node>& trie, std::string_view s);
  // Byte ranges of `s` to hide (sorted, merged).
  std::vector<tokenizer::TextRange> ranges(std::string_view s) const;

  std::vector<std::string> texts_;
  std::vector<Node> forward_;   // trie of the texts
  std::vector<Node> backward_;  // trie of the reversed texts
  size_t max_len_ = 0;
  bool first_byte_[256] = {};
  bool last_byte_[256] = {};
};

}  // namespace ferrite::runtime
