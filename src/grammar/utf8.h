// Incremental UTF-8 decoding for the grammar matcher: text arrives in token
// pieces that may split a multi-byte sequence, so the decoder keeps the
// pending bytes of an incomplete sequence between calls.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ferrite::grammar {

// State of a partially decoded sequence. value holds the bits read so far,
// remaining the number of continuation bytes still expected (0 = idle).
struct Utf8State {
  uint32_t value = 0;
  uint8_t remaining = 0;
  uint8_t length = 0;  // total length of the sequence being decoded

  bool idle() const { return remaining == 0; }
  bool operator==(const Utf8State&) const = default;
};

enum class Utf8Step : uint8_t {
  Complete,  // a code point was decoded (in *cp)
  Pending,   // more bytes needed
  Invalid,   // the byte cannot continue or start a sequence
};

// Feeds one byte. Rejects overlong encodings, surrogates and values beyond
// U+10FFFF as soon as the offending byte is seen.
Utf8Step utf8_feed(Utf8State& state, uint8_t byte, uint32_t* cp);

// Inclusive range of code points whose encoding begins with the bytes of a
// pending state. Only meaningful when !state.idle().
void utf8_pending_range(const Utf8State& state, uint32_t* lo, uint32_t* hi);

// Decodes the first code point of `text` (which must be valid UTF-8 there);
// returns the number of bytes used, or 0 when the bytes are not valid UTF-8.
size_t utf8_decode_one(std::string_view text, uint32_t* cp);

// Appends the UTF-8 encoding of cp.
void utf8_append(std::string& out, uint32_t cp);

}  // namespace ferrite::grammar
