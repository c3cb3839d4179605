#include "grammar/grammar.h"

#include <algorithm>
#include <cstdio>

#include "grammar/utf8.h"

namespace ferrite::grammar {

namespace {

std::string position_prefix(size_t line, size_t column) {
  if (line == 0) return "grammar: ";
  return "grammar: line " + std::to_string(line) + ", column " + std::to_string(column) + ": ";
}

// Writes a code point inside a GBNF literal or class, escaping what the
// parser would otherwise read as syntax.
void append_escaped(std::string& out, uint32_t cp, bool in_class) {
  switch (cp) {
    case '\n': out += "\\n"; return;
    case '\r': out += "\\r"; return;
    case '\t': out += "\\t"; return;
    case '\\': out += "\\\\"; return;
    case '"': out += "\\\""; return;
    default: break;
  }
  if (in_class && (cp == ']' || cp == '[' || cp == '-' || cp == '^')) {
    out += '\\';
    out += static_cast<char>(cp);
    return;
  }
  if (cp < 0x20 || cp == 0x7F || (cp >= 0xD800 && cp <= 0xDFFF)) {
    char buf[16];
    std::snprintf(buf, sizeof buf, cp <= 0xFF ? "\\x%02X" : "\\u%04X", cp);
    out += buf;
    return;
  }
  utf8_append(out, cp);
}

}  // namespace

GrammarError::GrammarError(size_t line, size_t column, const std::string& problem)
    : InvalidArgument(position_prefix(line, column) + problem), line_(line), column_(column) {}

void CharSet::normalize() {
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  ranges = std::move(merged);
  ascii[0] = ascii[1] = 0;
  for (uint32_t cp = 0; cp < 128; ++cp) {
    if (contains_slow(cp)) ascii[cp >> 6] |= uint64_t{1} << (cp & 63);
  }
}

bool CharSet::contains_slow(uint32_t cp) const {
  // Ranges are sorted: find the last range starting at or before cp.
  auto it = std::upper_bound(ranges.begin(), ranges.end(), cp,
                             [](uint32_t v, const std::pair<uint32_t, uint32_t>& r) {
                               return v < r.first;
                             });
  const bool in = it != ranges.begin() && cp <= std::prev(it)->second;
  return in != negated;
}

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const auto& r : ranges) {
      if (r.first <= hi && lo <= r.second) return true;
    }
    return false;
  }
  // The complement meets [lo, hi] unless the ranges cover all of it.
  uint32_t next = lo;
  for (const auto& r : ranges) {
    if (r.second < next) continue;
    if (r.first > next) return true;
    if (r.second >= hi) return false;
    next = r.second + 1;
  }
  return next <= hi;
}

int64_t Grammar::find_rule(std::string_view name) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].name == name) return static_cast<int64_t>(i);
  }
  return -1;
}

std::string Grammar::to_gbnf() const {
  std::string out;
  for (const Rule& rule : rules_) {
    out += rule.name + " ::=";
    for (size_t a = 0; a < rule.alternatives.size(); ++a) {
      if (a > 0) out += " |";
      for (uint32_t e = rule.alternatives[a]; elements_[e].kind != ElementKind::End; ++e) {
        const Element& el = elements_[e];
        out += ' ';
        if (el.kind == ElementKind::Rule) {
          out += rules_[el.value].name;
          continue;
        }
        const CharSet& cs = char_sets_[el.value];
        if (cs.negated && cs.ranges.empty()) {
          out += '.';
          continue;
        }
        out += cs.negated ? "[^" : "[";
        for (const auto& [lo, hi] : cs.ranges) {
          append_escaped(out, lo, true);
          if (hi != lo) {
            out += '-';
            append_escaped(out, hi, true);
          }
        }
        out += ']';
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace ferrite::grammar
