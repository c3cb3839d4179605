// Incremental detokenization for streaming generation. Tokens arrive one at
// a time; the text returned is always whole UTF-8: bytes of a character split
// across tokens (byte tokens, partial byte-level pieces) are held until the
// character completes. Bytes that can never form a character are replaced by
// U+FFFD, so the output is valid UTF-8 at every step.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tokenizer/tokenizer.h"

namespace ferrite::tokenizer {

class StreamDecoder {
 public:
  // `special`: render control tokens' text. The tokenizer must outlive this.
  explicit StreamDecoder(const Tokenizer& tok, bool special = false);

  // Text completed by `id` (may be empty).
  std::string push(int32_t id);
  // Whatever is pending (an incomplete sequence becomes U+FFFD); resets.
  std::string flush();
  // Forgets pending bytes and the start-of-text state.
  void reset();
  // The tokens continue text already shown (a completion after its prompt):
  // the first piece keeps its leading space.
  void continue_text() { at_start_ = false; }
  // The tokens continue `prompt`: the first piece keeps its leading space
  // when the prompt shows any text (so prompt text + output is the decode of
  // prompt + output), and loses it as decode() does when the prompt is only
  // control tokens (a BOS).
  void follow(std::span<const int32_t> prompt);

 private:
  // Moves the complete prefix of pending_ to `out`.
  void drain(std::string& out, bool final);

  const Tokenizer& tok_;
  bool special_;
  bool at_start_ = true;
  std::string pending_;
};

}  // namespace ferrite::tokenizer
