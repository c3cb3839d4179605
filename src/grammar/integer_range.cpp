// Decimal integers in a range as a GBNF expression. Numbers are written
// without leading zeros ("0" alone for zero, "-" before negatives, no "-0").
// A range of equal-length numbers [x, y] splits on the first digit:
//   x0 (x[1:] .. 99..9) | [x0+1 .. y0-1] [0-9]{n-1} | y0 (00..0 .. y[1:])
#include <string>
#include <vector>

#include "core/error.h"
#include "grammar/json_schema.h"

namespace ferrite::grammar {

namespace {

std::string join_alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) {
    if (i > 0) out += " | ";
    out += alts[i];
  }
  return out + ")";
}

std::string digit_class(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + std::string("-") + hi + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? "[0-9]" : std::string("[0-9]{") + std::to_string(n) + "}";
}

// Equal-length digit strings, x <= y.
std::string same_length(const std::string& x, const std::string& y) {
  const size_t n = x.size();
  if (n == 1) return digit_class(x[0], y[0]);
  if (x[0] == y[0]) return std::string("\"") + std::string(1, x[0]) + std::string("\" ") + same_length(x.substr(1), y.substr(1));
  const std::string x_rest = x.substr(1), y_rest = y.substr(1);
  if (x_rest == std::string(n - 1, '0') && y_rest == std::string(n - 1, '9')) {
    return digit_class(x[0], y[0]) + std::string(" ") + any_digits(n - 1);
  }
  std::vector<std::string> alts;
  alts.push_back(std::string("\"") + std::string(1, x[0]) + std::string("\" ") + same_length(x_rest, std::string(n - 1, '9')));
  if (x[0] + 1 <= y[0] - 1) {
    alts.push_back(digit_class(static_cast<char>(x[0] + 1), static_cast<char>(y[0] - 1)) + " " +
                   any_digits(n - 1));
  }
  alts.push_back(std::string("\"") + std::string(1, y[0]) + std::string("\" ") + same_length(std::string(n - 1, '0'), y_rest));
  return join_alternatives(alts);
}

// Non-negative integers in [a, b]; b < 0 means unbounded.
std::string non_negative(uint64_t a, int64_t b_signed) {
  const std::string as = std::to_string(a);
  std::vector<std::string> alts;
  if (b_signed < 0) {
    alts.push_back(same_length(as, std::string(as.size(), '9')));
    alts.push_back(std::string("[1-9] [0-9]{") + std::to_string(as.size()) + ",}");
    return join_alternatives(alts);
  }
  const auto b = static_cast<uint64_t>(b_signed);
  const std::string bs = std::to_string(b);
  for (size_t len = as.size(); len <= bs.size(); ++len) {
    const std::string lo = len == as.size() ? as : std::string("1") + std::string(len - 1, '0');
    const std::string hi = len == bs.size() ? bs : std::string(len, '9');
    alts.push_back(same_length(lo, hi));
  }
  return join_alternatives(alts);
}

}  // namespace

std::string integer_range_gbnf(const int64_t* lo, const int64_t* hi) {
  if (lo && hi && *lo > *hi) {
    throw InvalidArgument(std::string("json schema: no integer lies between minimum ") + std::to_string(*lo) +
                          std::string(" and maximum ") + std::to_string(*hi));
  }
  std::vector<std::string> alts;
  // Negative part: -m for m in [max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    const uint64_t m_lo = (hi && *hi < 0) ? static_cast<uint64_t>(-(*hi + 1)) + 1 : 1;
    const int64_t m_hi = lo ? static_cast<int64_t>(static_cast<uint64_t>(-(*lo + 1)) + 1) : -1;
    // m_hi overflows int64 only for lo = INT64_MIN: treat it as unbounded.
    alts.push_back(std::string("\"-\" ") + non_negative(m_lo, m_hi < 0 && lo ? -1 : m_hi));
  }
  if (!hi || *hi >= 0) {
    const uint64_t a = (lo && *lo > 0) ? static_cast<uint64_t>(*lo) : 0;
    alts.push_back(non_negative(a, hi ? *hi : -1));
  }
  return join_alternatives(alts);
}

}  // namespace ferrite::grammar
