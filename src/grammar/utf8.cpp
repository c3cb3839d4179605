#include "grammar/utf8.h"

#include <string>

namespace ferrite::grammar {

namespace {

constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;
constexpr uint32_t kMaxCp = 0x10FFFF;
// Smallest code point that needs a sequence of 2, 3, 4 bytes.
constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};

// Smallest and largest value the still-missing `remaining` continuation bytes
// can add below the bits already read.
uint32_t low_bits_max(uint8_t remaining) { return (1u << (6 * remaining)) - 1; }

}  // namespace

Utf8Step utf8_feed(Utf8State& s, uint8_t b, uint32_t* cp) {
  if (s.remaining == 0) {
    if (b < 0x80) {
      *cp = b;
      return Utf8Step::Complete;
    }
    if ((b & 0xE0) == 0xC0) {
      s = {static_cast<uint32_t>(b & 0x1F), 1, 2};
    } else if ((b & 0xF0) == 0xE0) {
      s = {static_cast<uint32_t>(b & 0x0F), 2, 3};
    } else if ((b & 0xF8) == 0xF0) {
      s = {static_cast<uint32_t>(b & 0x07), 3, 4};
    } else {
      return Utf8Step::Invalid;  // continuation byte or 0xF8..0xFF without a lead
    }
    // Reject leads that can only produce overlong or out-of-range values.
    uint32_t lo = 0;
    uint32_t hi = 0;
    utf8_pending_range(s, &lo, &hi);
    if (hi < kMinForLength[s.length] || lo > kMaxCp) {
      s = {};
      return Utf8Step::Invalid;
    }
    return Utf8Step::Pending;
  }
  if ((b & 0xC0) != 0x80) {
    s = {};
    return Utf8Step::Invalid;
  }
  Utf8State next = s;
  next.value = (s.value << 6) | (b & 0x3F);
  next.remaining = static_cast<uint8_t>(s.remaining - 1);
  uint32_t lo = 0;
  uint32_t hi = 0;
  if (next.remaining == 0) {
    lo = hi = next.value;
  } else {
    utf8_pending_range(next, &lo, &hi);
  }
  // Overlong, beyond U+10FFFF, or wholly inside the surrogate block.
  if (hi < kMinForLength[s.length] || lo > kMaxCp ||
      (lo >= kSurrogateFirst && hi <= kSurrogateLast)) {
    s = {};
    return Utf8Step::Invalid;
  }
  if (next.remaining == 0) {
    s = {};
    *cp = next.value;
    return Utf8Step::Complete;
  }
  s = next;
  return Utf8Step::Pending;
}

void utf8_pending_range(const Utf8State& s, uint32_t* lo, uint32_t* hi) {
  const uint32_t shift = 6u * s.remaining;
  *lo = s.value << shift;
  *hi = (s.value << shift) | low_bits_max(s.remaining);
  if (*lo < kMinForLength[s.length]) *lo = kMinForLength[s.length];
  if (*hi > kMaxCp) *hi = kMaxCp;
}

size_t utf8_decode_one(std::string_view text, uint32_t* cp) {
  Utf8State s;
  for (size_t i = 0; i < text.size() && i < 4; ++i) {
    switch (utf8_feed(s, static_cast<uint8_t>(text[i]), cp)) {
      case Utf8Step::Complete:
        return i + 1;
      case Utf8Step::Invalid:
        return 0;
      case Utf8Step::Pending:
        break;
    }
  }
  return 0;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace ferrite::grammar
