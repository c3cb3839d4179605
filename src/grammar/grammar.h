// A compiled GBNF grammar (llama.cpp's grammar format) over Unicode code
// points.
//
// Every rule is a list of alternatives; every alternative is a sequence of
// elements stored contiguously in one flat array and closed by an End
// element. An element either matches one code point from a character set or
// refers to another rule. Repetitions (*, +, ?, {m,n}) and parenthesized
// groups are compiled into generated helper rules, so the matcher only ever
// sees these three kinds of element.
//
// Grammars are validated when parsed: every referenced rule is defined, the
// root rule exists, and no rule is left-recursive (directly, indirectly or
// through rules that can match the empty string), because the stack-based
// matcher cannot expand a left-recursive rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace ferrite::grammar {

// A malformed or unusable grammar. line() and column() are 1-based positions
// in the grammar text (0 when the problem has no single position, e.g. a
// cycle of left-recursive rules).
class GrammarError : public InvalidArgument {
 public:
  GrammarError(size_t line, size_t column, const std::string& problem);
  size_t line() const { return line_; }
  size_t column() const { return column_; }

 private:
  size_t line_;
  size_t column_;
};

// Limits that keep a hostile grammar from exhausting memory or time.
struct Limits {
  size_t max_text_bytes = 4u << 20;     // grammar source size
  size_t max_elements = 2u << 20;       // compiled elements, after repetition expansion
  size_t max_nesting = 128;             // parenthesis nesting depth
  uint32_t max_repetition = 100000;     // largest m or n in {m,n}
};

// Largest Unicode code point.
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// A set of code points: a union of inclusive ranges, optionally complemented.
// `.` is the complement of the empty set.
struct CharSet {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // sorted, disjoint, merged
  bool negated = false;
  uint64_t ascii[2] = {0, 0};  // membership bitmap of code points < 128 (after negation)

  // Sorts and merges the ranges and fills the ASCII bitmap.
  void normalize();
  bool contains(uint32_t cp) const {
    if (cp < 128) return (ascii[cp >> 6] >> (cp & 63)) & 1;
    return contains_slow(cp);
  }
  // True when some code point in [lo, hi] is in the set.
  bool intersects(uint32_t lo, uint32_t hi) const;
  bool operator==(const CharSet& o) const { return negated == o.negated && ranges == o.ranges; }

 private:
  bool contains_slow(uint32_t cp) const;
};

enum class ElementKind : uint8_t {
  End,    // closes an alternative
  Chars,  // matches one code point of char_sets()[value]
  Rule,   // expands rules()[value]
};

struct Element {
  ElementKind kind = ElementKind::End;
  uint32_t value = 0;
};

struct Rule {
  std::string name;
  std::vector<uint32_t> alternatives;  // index of each alternative's first element
};

class Grammar {
 public:
  // Parses GBNF text; `root` names the start rule. Throws GrammarError.
  static Grammar parse(std::string_view text, std::string_view root = "root",
                       const Limits& limits = Limits{});

  const std::vector<Element>& elements() const { return elements_; }
  const std::vector<CharSet>& char_sets() const { return char_sets_; }
  const std::vector<Rule>& rules() const { return rules_; }
  uint32_t root() const { return root_; }
  // Index of the rule with this name, or -1.
  int64_t find_rule(std::string_view name) const;

  // Renders the compiled grammar back to GBNF (one line per rule); parsing
  // the result gives an equivalent grammar. For diagnostics and tests.
  std::string to_gbnf() const;

 private:
  friend class Builder;
  std::vector<Element> elements_;
  std::vector<CharSet> char_sets_;
  std::vector<Rule> rules_;
  uint32_t root_ = 0;
};

}  // namespace ferrite::grammar
