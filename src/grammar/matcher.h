// Incremental matching of generated text against a grammar, and the token
// filter a sampler calls before each draw.
//
// A Matcher holds the set of parse stacks reachable after the text accepted
// so far (plus the bytes of an incomplete UTF-8 sequence). Typical sampler
// use, once per generated token:
//
//   grammar::TokenTrie trie(pieces, eog_ids);        // once per vocabulary
//   grammar::Matcher m(grammar);
//   ...
//   const grammar::TokenMask& ok = m.allowed(trie);  // mask the logits
//   ... sample token t among ok ...
//   m.accept_token(pieces[t]);                       // or nothing for EOG
//
// or, cheaper when the unconstrained choice is usually right, sample first
// and check it with m.allows(pieces[t]), filtering only on a miss.
//
// Not thread-safe; clones share caches, so keep a matcher and its clones on
// one thread (clone into a fresh matcher with detach() otherwise).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/stack_store.h"
#include "grammar/token_trie.h"
#include "grammar/utf8.h"

namespace ferrite::grammar {

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> grammar, const MatcherLimits& limits = {});
  // Copies the grammar.
  explicit Matcher(const Grammar& grammar, const MatcherLimits& limits = {});

  // Reads one code point; false (and no change) when the grammar rejects it.
  bool accept(uint32_t cp);
  // Reads raw bytes (a token's piece), which may end inside a multi-byte
  // UTF-8 sequence that the next call completes. All or nothing: false, with
  // no change, when any byte is rejected or the bytes are not UTF-8.
  bool accept_bytes(std::string_view bytes);
  bool accept_token(std::string_view piece) { return accept_bytes(piece); }

  // Would accept_bytes(piece) succeed? An empty piece is not allowed.
  bool allows(std::string_view piece);
  // The text so far is a complete sentence of the grammar (so an
  // end-of-generation token is allowed).
  bool is_complete() const;
  // No further text can be accepted (the grammar is complete and ends here).
  bool is_finished() const;

  // Tokens that keep the text a valid prefix: mask over trie.n_vocab().
  // End-of-generation tokens are set exactly when is_complete(). The
  // reference stays valid until the next call on this matcher.
  const TokenMask& allowed(const TokenTrie& trie);
  // Convenience without a prebuilt trie (builds one per call: slow).
  std::vector<bool> allowed(const std::vector<std::string>& pieces,
                            const std::vector<int32_t>& eog);

  // A matcher in the same state; it shares this one's caches.
  Matcher clone() const;
  // A matcher in the same state with caches of its own.
  Matcher detach() const;
  // Back to the start of the grammar.
  void reset();

  const Grammar& grammar() const { return store_->grammar(); }
  // Bytes of the pending incomplete UTF-8 sequence (0 to 3).
  size_t pending_bytes() const { return pending_.length - pending_.remaining; }

 private:
  struct MaskKey {
    uint64_t trie;
    uint32_t set;
    uint32_t utf8_value;
    uint8_t utf8_remaining;
    bool operator==(const MaskKey&) const = default;
  };
  struct MaskKeyHash {
    size_t operator()(const MaskKey& k) const;
  };
  using MaskCache = std::unordered_map<MaskKey, TokenMask, MaskKeyHash>;

  Matcher(std::shared_ptr<StackStore> store, std::shared_ptr<MaskCache> masks, uint32_t set,
          Utf8State pending);
  // Walks `bytes` from (set, pending); false when rejected.
  bool walk(std::string_view bytes, uint32_t* set, Utf8State* pending);
  void fill_mask(const TokenTrie& trie, TokenMask& mask);
  void maybe_compact();

  std::shared_ptr<StackStore> store_;
  std::shared_ptr<MaskCache> masks_;
  uint32_t set_ = 0;
  Utf8State pending_;
  TokenMask scratch_;
};

}  // namespace ferrite::grammar
