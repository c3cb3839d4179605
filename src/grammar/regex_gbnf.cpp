// A regex subset (ECMA-262 style, as JSON schema `pattern` uses) compiled to
// a GBNF expression over the JSON-encoded text of a string: a literal quote
// or backslash becomes its escape (\" or \\), control characters their
// \uXXXX or short escape, and classes never admit a raw quote, backslash or
// control character.
//
// Supported: literals, escapes (\d \D \w \W \s \S, \n \t \r \f \v, \xHH,
// \uHHHH, escaped punctuation), ., [classes] with ranges and negation, groups
// ( ) and (?: ), alternation |, quantifiers * + ? {m} {m,} {m,n} (a trailing
// lazy ? is ignored), ^ at the start and $ at the end. Anything else
// (backreferences, lookaround, anchors in the middle) is refused.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "grammar/json_schema.h"
#include "grammar/grammar.h"
#include "grammar/utf8.h"

namespace ferrite::grammar {

namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;
constexpr uint32_t kMaxQuantifier = 10000;
constexpr size_t kMaxRegexDepth = 64;

// GBNF literal for the JSON encoding of one code point.
std::string json_char_literal(uint32_t cp) {
  switch (cp) {
    case '"': return "\"\\\\\\\"\"";   // GBNF "\\\"" : the JSON text \"
    case '\\': return "\"\\\\\\\\\"";  // the JSON text: two backslashes
    case '\n': return "\"\\\\n\"";
    case '\r': return "\"\\\\r\"";
    case '\t': return "\"\\\\t\"";
    case '\b': return "\"\\\\b\"";
    case '\f': return "\"\\\\f\"";
    default: break;
  }
  if (cp < 0x20) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\"\\\\u%04x\"", cp);
    return buf;
  }
  std::string out = "\"";
  utf8_append(out, cp);
  return out + "\"";
}

std::string class_char(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\U%08X", cp);
  return buf;
}

Ranges complement(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : r) {
    if (hi < next) continue;
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return out;
}

// GBNF for "one string character whose decoded value is in `set`".
std::string class_expr(const Ranges& set) {
  // Raw characters: the set minus quote, backslash and controls.
  Ranges banned = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
  std::string raw = "[";
  bool any_raw = false;
  std::vector<std::string> escaped;
  for (const auto& [lo, hi] : set) {
    uint32_t a = lo;
    while (a <= hi) {
      // Skip banned code points, emitting their escapes.
      bool is_banned = false;
      for (const auto& [blo, bhi] : banned) {
        if (a >= blo && a <= bhi) is_banned = true;
      }
      if (is_banned) {
        if (escaped.size() < 40) escaped.push_back(json_char_literal(a));
        ++a;
        continue;
      }
      uint32_t b = hi;
      for (const auto& [blo, bhi] : banned) {
        if (blo > a && blo <= b) b = blo - 1;
      }
      raw += class_char(a);
      if (b != a) {
        raw += '-';
        raw += class_char(b);
      }
      any_raw = true;
      if (b == kMaxCodePoint) break;
      a = b + 1;
    }
  }
  raw += "]";
  std::vector<std::string> alts;
  if (any_raw) alts.push_back(raw);
  for (auto& e : escaped) alts.push_back(std::move(e));
  if (alts.empty()) return "[]";  // matches nothing
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

class RegexCompiler {
 public:
  RegexCompiler(std::string_view p, std::string char_rule) : p_(p), char_rule_(std::move(char_rule)) {}

  std::string run() {
    const bool anchored_start = !p_.empty() && p_[0] == '^';
    if (anchored_start) ++pos_;
    std::string body = alternation(0);
    if (pos_ < p_.size()) fail("unexpected ')'");
    std::string out;
    if (!anchored_start) out += char_rule_ + "* ";
    out += std::string("(") + body + ")";
    if (!anchored_end_) out += std::string(" ") + char_rule_ + "*";
    return out;
  }

 private:
  std::string_view p_;
  std::string char_rule_;
  size_t pos_ = 0;
  bool anchored_end_ = false;

  [[noreturn]] void fail(const std::string& what) const {
    throw InvalidArgument(std::string("json schema pattern \"") + std::string(p_) + "\": at offset " +
                          std::to_string(pos_) + std::string(": ") + what);
  }
  bool at_end() const { return pos_ >= p_.size(); }
  char peek() const { return at_end() ? '\0' : p_[pos_]; }

  std::string alternation(size_t depth) {
    if (depth > kMaxRegexDepth) fail("groups nested too deeply");
    std::string out = sequence(depth);
    while (peek() == '|') {
      ++pos_;
      out += std::string(" | ") + sequence(depth);
    }
    return out;
  }

  std::string sequence(size_t depth) {
    std::string out;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        ++pos_;
        if (!at_end() || depth > 0) fail("'$' is supported only at the end");
        anchored_end_ = true;
        break;
      }
      std::string item = atom(depth);
      item = quantified(item);
      if (!out.empty()) out += " ";
      out += item;
    }
    return out.empty() ? "\"\"" : out;
  }

  std::string quantified(const std::string& item) {
    uint32_t min = 1, max = 1;
    bool unbounded = false;
    const char c = peek();
    if (c == '*') {
      min = 0, unbounded = true;
    } else if (c == '+') {
      unbounded = true;
    } else if (c == '?') {
      min = 0;
    } else if (c == '{' && pos_ + 1 < p_.size() && std::isdigit(static_cast<unsigned char>(p_[pos_ + 1]))) {
      ++pos_;
      min = max = number();
      if (peek() == ',') {
        ++pos_;
        if (peek() == '}') {
          unbounded = true;
        } else {
          max = number();
        }
      }
      if (peek() != '}') fail("expected '}'");
      if (!unbounded && max < min) fail("quantifier maximum below minimum");
    } else {
      return item;
    }
    ++pos_;
    if (peek() == '?') ++pos_;  // lazy: same language
    if (peek() == '*' || peek() == '+' || peek() == '{') fail("nested quantifier");
    std::string out = std::string("(") + item + ")";
    if (unbounded) return min == 0 ? out + "*" : min == 1 ? out + "+" : out + std::string("{") + std::to_string(min) + ",}";
    if (min == 0 && max == 1) return out + "?";
    return out + std::string("{") + std::to_string(min) + std::string(",") + std::to_string(max) + "}";
  }

  uint32_t number() {
    uint32_t v = 0;
    if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("expected a number");
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + static_cast<uint32_t>(peek() - '0');
      if (v > kMaxQuantifier) fail(std::string("quantifier above ") + std::to_string(kMaxQuantifier));
      ++pos_;
    }
    return v;
  }

  uint32_t next_code_point() {
    uint32_t cp = 0;
    const size_t n = utf8_decode_one(p_.substr(pos_), &cp);
    if (n == 0) fail("invalid UTF-8");
    pos_ += n;
    return cp;
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int h = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (h < 0) fail("bad hex escape");
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    return v;
  }

  // After a backslash: a class escape (fills `set`, returns true) or a single
  // code point (in *cp).
  bool escape(Ranges* set, uint32_t* cp) {
    if (at_end()) fail("pattern ends with '\\'");
    const char c = p_[pos_++];
    const Ranges digit = {{'0', '9'}};
    const Ranges word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    const Ranges space = {{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x2028, 0x2029}, {0xFEFF, 0xFEFF}};
    switch (c) {
      case 'd': *set = digit; return true;
      case 'D': *set = complement(digit); return true;
      case 'w': *set = word; return true;
      case 'W': *set = complement(word); return true;
      case 's': *set = space; return true;
      case 'S': *set = complement(space); return true;
      case 'n': *cp = '\n'; return false;
      case 't': *cp = '\t'; return false;
      case 'r': *cp = '\r'; return false;
      case 'f': *cp = '\f'; return false;
      case 'v': *cp = '\v'; return false;
      case '0': *cp = 0; return false;
      case 'x': *cp = hex(2); return false;
      case 'u': *cp = hex(4); return false;
      default: break;
    }
    if (std::isalnum(static_cast<unsigned char>(c))) {
      --pos_;
      fail(std::string("unsupported escape '\\") + c + "'");
    }
    *cp = static_cast<uint8_t>(c);
    return false;
  }

  std::string atom(size_t depth) {
    const char c = peek();
    if (c == '(') {
      ++pos_;
      if (peek() == '?') {
        if (p_.substr(pos_, 2) != "?:") fail("lookaround and named groups are not supported");
        pos_ += 2;
      }
      std::string inner = alternation(depth + 1);
      if (peek() != ')') fail("unclosed '('");
      ++pos_;
      return std::string("(") + inner + ")";
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++pos_;
      return class_expr(complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
    }
    if (c == '\\') {
      ++pos_;
      Ranges set;
      uint32_t cp = 0;
      if (escape(&set, &cp)) return class_expr(set);
      return json_char_literal(cp);
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') fail("quantifier without an item");
    if (c == '^') fail("'^' is supported only at the start");
    return json_char_literal(next_code_point());
  }

  std::string char_class() {
    ++pos_;
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    Ranges set;
    bool first = true;
    while (true) {
      if (at_end()) fail("unterminated character class");
      if (peek() == ']' && !first) break;
      first = false;
      uint32_t lo = 0;
      if (peek() == '\\') {
        ++pos_;
        Ranges sub;
        if (escape(&sub, &lo)) {
          set.insert(set.end(), sub.begin(), sub.end());
          continue;
        }
      } else {
        lo = next_code_point();
      }
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        if (peek() == '\\') {
          ++pos_;
          Ranges sub;
          if (escape(&sub, &hi)) fail("a class escape cannot end a range");
        } else {
          hi = next_code_point();
        }
        if (hi < lo) fail("character range out of order");
      }
      set.push_back({lo, hi});
    }
    ++pos_;
    if (negated) set = complement(set);
    std::sort(set.begin(), set.end());
    return class_expr(set);
  }
};

}  // namespace

std::string regex_to_gbnf(std::string_view pattern, const std::string& char_rule) {
  return RegexCompiler(pattern, char_rule).run();
}

}  // namespace ferrite::grammar
