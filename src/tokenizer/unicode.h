// Unicode helpers shared by the tokenizers: UTF-8 decoding with the lenient
// rules the reference tokenizers use, codepoint classes (Unicode general
// categories from utf8proc plus the White_Space property), the GPT-2
// byte <-> printable-codepoint mapping, and the per-codepoint NFD used by
// BERT normalization.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ferrite::tokenizer {

constexpr uint32_t kReplacementChar = 0xFFFD;
// "▁" (U+2581), the SentencePiece escaped space.
constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";

// Length of the UTF-8 sequence announced by lead byte `c`, from its top four
// bits only (continuation bytes count as 1): 0x00-0xBF -> 1, 0xC0-0xDF -> 2,
// 0xE0-0xEF -> 3, 0xF0-0xFF -> 4.
inline size_t utf8_seq_len(uint8_t c) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[c >> 4];
}

// Appends the UTF-8 encoding of `cpt` to `out`.
void append_utf8(std::string& out, uint32_t cpt);

// Decodes one codepoint at `pos` with strict rules (no overlongs, no
// surrogates, <= U+10FFFF). Returns its byte length, or 0 when the bytes at
// `pos` are not a valid sequence.
size_t decode_utf8_strict(std::string_view s, size_t pos, uint32_t& cpt);

// True when `s` is entirely valid UTF-8 (strict rules).
bool is_valid_utf8(std::string_view s);

// Copies `s` replacing every invalid byte sequence by U+FFFD (one per
// offending byte, as the reference does).
std::string sanitize_utf8(std::string_view s);

// Codepoint classes, named after the Unicode general category groups.
struct CodepointFlags {
  bool letter = false;       // L*
  bool number = false;       // N*
  bool punctuation = false;  // P*
  bool symbol = false;       // S*
  bool mark = false;         // M*
  bool control = false;      // Cc Cf Co Cs
  bool separator = false;    // Z*
  bool whitespace = false;   // White_Space property
};
CodepointFlags codepoint_flags(uint32_t cpt);
bool is_whitespace(uint32_t cpt);

// Simple lowercase mapping.
uint32_t to_lower(uint32_t cpt);
// First codepoint of the canonical decomposition (NFD) of `cpt`.
uint32_t nfd_first(uint32_t cpt);

// GPT-2 byte-level encoding: every byte maps to one printable codepoint.
class ByteEncoder {
 public:
  static const ByteEncoder& get();
  // UTF-8 of the codepoint standing for byte `b`.
  std::string_view encode(uint8_t b) const { return {enc_[b].data(), enc_len_[b]}; }
  // Byte for codepoint `cpt`, or -1 when `cpt` stands for no byte.
  int decode(uint32_t cpt) const { return cpt < kMaxCpt ? dec_[cpt] : -1; }

 private:
  ByteEncoder();
  static constexpr uint32_t kMaxCpt = 324;  // 256 + the 68 remapped bytes
  std::array<std::array<char, 2>, 256> enc_{};
  std::array<uint8_t, 256> enc_len_{};
  std::array<int16_t, kMaxCpt> dec_{};
};

}  // namespace ferrite::tokenizer
