// Internal: accumulates rules while a grammar is parsed, interns character
// sets, enforces the element limit, then validates and flattens into a
// Grammar. Used by the GBNF parser only.
#pragma once

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace ferrite::grammar {

class Builder {
 public:
  using Sequence = std::vector<Element>;

  Builder() = default;

  // Rule named in the text; created (undefined) on first mention. `offset`
  // (a byte offset in the text) records the first mention for the
  // "undefined rule" error.
  uint32_t user_rule(const std::string& name, size_t offset);
  // Marks a user rule defined; returns false when it already was.
  bool define(uint32_t rule);
  // A fresh helper rule named after `parent`.
  uint32_t helper_rule(uint32_t parent);

  void add_alternative(uint32_t rule, Sequence seq);
  uint32_t char_set(CharSet cs);  // interned index

  const std::string& name(uint32_t rule) const { return rules_[rule].name; }

  // Validates (undefined rules, root, left recursion) and flattens. `text`
  // is the grammar source, for error positions.
  Grammar finish(const std::string& root, std::string_view text);

 private:
  struct PendingRule {
    std::string name;
    std::vector<Sequence> alternatives;
    bool defined = false;
    size_t offset = 0;  // first mention
    uint32_t helpers = 0;         // helper rules generated from this one
  };

  std::vector<PendingRule> rules_;
  std::unordered_map<std::string, uint32_t> user_names_;
  std::vector<CharSet> char_sets_;
  std::map<std::pair<bool, std::vector<std::pair<uint32_t, uint32_t>>>, uint32_t> set_index_;
};

// Throws GrammarError when the grammar holds a left recursion that would make
// a parse stack grow without consuming input. Cycles that only pass through
// the last element of alternatives (such as a repetition of something that
// can be empty) leave the stack unchanged and are allowed.
void check_left_recursion(const Grammar& g);

// 1-based line and column of a byte offset in text.
void text_location(std::string_view text, size_t offset, size_t* line, size_t* column);

}  // namespace ferrite::grammar
