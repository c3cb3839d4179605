// DRY ("Don't Repeat Yourself", by pi6am; as in llama.cpp and koboldcpp):
// penalizes the tokens that would extend a sequence already repeated in the
// recent context. For each candidate token t, L(t) is the longest n such that
// the last n tokens of the context also occur earlier, immediately followed
// by t (n stopped at the most recent sequence breaker). When L(t) >= allowed
// length, logit(t) -= multiplier * base^(L(t) - allowed_length).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sampling/candidates.h"
#include "sampling/token_window.h"

namespace ferrite::sampling {

// Sequence breakers as token sequences: each key is the first ("head") token
// of a breaker and maps to the rest ("tail"); an empty tail is a one-token
// breaker.
using DryBreakers = std::unordered_multimap<int32_t, std::vector<int32_t>>;

// How to see tokens as text, for breakers given as strings.
struct TokenText {
  // pieces[id]: the text of token id (special tokens rendered as their text).
  std::vector<std::string> pieces;
  // Tokenizes a text (no BOS, special tokens not parsed). Optional: without
  // it a breaker only matches tokens whose text contains the whole breaker.
  std::function<std::vector<int32_t>(std::string_view)> tokenize;
};

// Breakers as llama.cpp derives them from strings (each cut to 40 bytes): a
// token whose text contains the breaker is a one-token breaker; a token whose
// text ends with a proper prefix of the breaker is a head, with the
// tokenization of the breaker's remainder (cut to 20 tokens) as its tail.
// Empty strings are skipped.
DryBreakers dry_breakers_from_strings(const std::vector<std::string>& breakers, const TokenText& text);

// Breakers given directly as token sequences (empty ones skipped).
DryBreakers dry_breakers_from_tokens(const std::vector<std::vector<int32_t>>& breakers);

struct DryParams {
  float multiplier = 0.0f;      // 0 disables
  float base = 1.75f;           // < 1 disables
  int32_t allowed_length = 2;
  int32_t last_n = 0;           // window (resolved: >= 0); 0 disables
};

class Dry {
 public:
  Dry(const DryParams& params, DryBreakers breakers);

  bool active() const;
  void accept(int32_t token);
  void apply(Candidates& c);
  void reset() { window_.clear(); }

  // The repeat length L(t) of every token that would extend a repeat of at
  // least allowed_length (computed by apply; exposed for tests).
  const std::unordered_map<int32_t, int>& repeat_lengths() const { return max_repeat_; }

 private:
  // Length limit from the most recent sequence breaker in the window.
  int repeat_limit(int n) const;

  DryParams params_;
  DryBreakers breakers_;
  TokenWindow window_;
  std::vector<int> z_;  // scratch: Z-function of the reversed window
  std::unordered_map<int32_t, int> max_repeat_;
};

}  // namespace ferrite::sampling
