#include "tokenizer/unicode.h"

#include <utf8proc.h>

namespace ferrite::tokenizer {

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt < 0x80) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

size_t decode_utf8_strict(std::string_view s, size_t pos, uint32_t& cpt) {
  const size_t n = s.size() - pos;
  const auto b = [&](size_t i) { return static_cast<uint8_t>(s[pos + i]); };
  const auto cont = [&](size_t i) { return (b(i) & 0xC0) == 0x80; };
  const uint8_t c0 = b(0);
  if (c0 < 0x80) {
    cpt = c0;
    return 1;
  }
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    if (n < 2 || !cont(1)) return 0;
    cpt = ((c0 & 0x1Fu) << 6) | (b(1) & 0x3Fu);
    return 2;
  }
  if (c0 >= 0xE0 && c0 <= 0xEF) {
    if (n < 3 || !cont(1) || !cont(2)) return 0;
    cpt = ((c0 & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
    if (cpt < 0x800 || (cpt >= 0xD800 && cpt <= 0xDFFF)) return 0;
    return 3;
  }
  if (c0 >= 0xF0 && c0 <= 0xF4) {
    if (n < 4 || !cont(1) || !cont(2) || !cont(3)) return 0;
    cpt = ((c0 & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) | ((b(2) & 0x3Fu) << 6) | (b(3) & 0x3Fu);
    if (cpt < 0x10000 || cpt > 0x10FFFF) return 0;
    return 4;
  }
  return 0;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t w = 0;
      for (int k = 0; k < 8; ++k) w |= static_cast<uint64_t>(static_cast<uint8_t>(s[i + k])) << (8 * k);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= s.size()) break;
    uint32_t cpt = 0;
    const size_t len = decode_utf8_strict(s, i, cpt);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  size_t i = 0;
  while (i < s.size()) {
    uint32_t cpt = 0;
    const size_t len = decode_utf8_strict(s, i, cpt);
    if (len == 0) {
      append_utf8(out, kReplacementChar);
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

bool is_whitespace(uint32_t cpt) {
  // The White_Space property of the Unicode Character Database.
  if (cpt <= 0x20) return cpt == 0x20 || (cpt >= 0x09 && cpt <= 0x0D);
  if (cpt < 0x85) return false;
  return cpt == 0x85 || cpt == 0xA0 || cpt == 0x1680 || (cpt >= 0x2000 && cpt <= 0x200A) || cpt == 0x2028 ||
         cpt == 0x2029 || cpt == 0x202F || cpt == 0x205F || cpt == 0x3000;
}

CodepointFlags codepoint_flags(uint32_t cpt) {
  CodepointFlags f;
  f.whitespace = is_whitespace(cpt);
  if (cpt > 0x10FFFF) return f;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cpt))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      f.letter = true;
      break;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      f.mark = true;
      break;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      f.number = true;
      break;
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      f.punctuation = true;
      break;
    case UTF8PROC_CATEGORY_SM:
    case UTF8PROC_CATEGORY_SC:
    case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
      f.symbol = true;
      break;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      f.separator = true;
      break;
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
      f.control = true;
      break;
    default:
      break;
  }
  return f;
}

uint32_t to_lower(uint32_t cpt) {
  if (cpt > 0x10FFFF) return cpt;
  return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cpt)));
}

uint32_t nfd_first(uint32_t cpt) {
  if (cpt < 0xC0 || cpt > 0x10FFFF) return cpt;
  constexpr int kMaxDecomposition = 8;
  utf8proc_int32_t buf[kMaxDecomposition];
  int boundclass = 0;
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cpt), buf, kMaxDecomposition,
                                                     UTF8PROC_DECOMPOSE, &boundclass);
  if (n <= 0) return cpt;
  return static_cast<uint32_t>(buf[0]);
}

ByteEncoder::ByteEncoder() {
  dec_.fill(-1);
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    const uint32_t cpt = printable ? static_cast<uint32_t>(b) : next++;
    std::string u;
    append_utf8(u, cpt);
    enc_len_[b] = static_cast<uint8_t>(u.size());
    for (size_t i = 0; i < u.size(); ++i) enc_[b][i] = u[i];
    dec_[cpt] = static_cast<int16_t>(b);
  }
}

const ByteEncoder& ByteEncoder::get() {
  static const ByteEncoder instance;
  return instance;
}

}  // namespace ferrite::tokenizer
