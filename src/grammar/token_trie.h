// A byte-level prefix trie of a vocabulary's token pieces, built once per
// vocabulary and shared by every matcher: token filtering walks it against
// the matcher's parse state, so tokens that share a prefix share the work and
// a rejected prefix prunes its whole subtree.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace ferrite::grammar {

class TokenTrie {
 public:
  struct Node {
    uint32_t first_child = 0;  // children are nodes [first_child, first_child + n_children)
    uint32_t n_children = 0;
    uint32_t first_token = 0;  // tokens ending here: tokens()[first_token, + n_tokens)
    uint32_t n_tokens = 0;
    uint8_t byte = 0;  // the byte on the edge into this node
  };

  // pieces[i] is token i's text (raw bytes, possibly a partial UTF-8
  // sequence). Tokens in `eog` (end of generation) are kept out of the trie:
  // they are allowed exactly when the grammar can be complete. Empty pieces
  // (control tokens with no text) are never allowed.
  TokenTrie(const std::vector<std::string>& pieces, const std::vector<int32_t>& eog);

  size_t n_vocab() const { return n_vocab_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<uint32_t>& tokens() const { return tokens_; }
  const std::vector<int32_t>& eog() const { return eog_; }
  // Distinguishes tries in the matcher's mask cache.
  uint64_t id() const { return id_; }

 private:
  size_t n_vocab_ = 0;
  std::vector<Node> nodes_;  // node 0 is the root
  std::vector<uint32_t> tokens_;
  std::vector<int32_t> eog_;
  uint64_t id_ = 0;
};

// One bit per token of a vocabulary.
class TokenMask {
 public:
  TokenMask() = default;
  explicit TokenMask(size_t n) : n_(n), words_((n + 63) / 64, 0) {}
  size_t size() const { return n_; }
  bool test(size_t i) const { return (words_[i >> 6] >> (i & 63)) & 1; }
  void set(size_t i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  void reset(size_t i) { words_[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
  void clear() { std::fill(words_.begin(), words_.end(), 0); }
  size_t count() const;
  std::vector<bool> to_vector() const;
  const std::vector<uint64_t>& words() const { return words_; }

 private:
  size_t n_ = 0;
  std::vector<uint64_t> words_;
};

}  // namespace ferrite::grammar
