// Where PCRE2's own Unicode tables (Unicode 14 in Debian 12's PCRE2 10.42)
// disagree with utf8proc's general categories (Unicode 15). The regex
// rewrite keeps a property escape for PCRE2 to evaluate (one table lookup
// per character, instead of a scan through hundreds of ranges) only where
// PCRE2's set is contained in the utf8proc one, and adds what it lacks.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/unicode_ranges.h"

namespace ferrite::tokenizer {

// A code point (surrogates never) whose category differs; the categories are
// UTF8PROC_CATEGORY_* values.
struct CategoryDifference {
  uint32_t cpt;
  int pcre2_category;
  int utf8proc_category;
};

// Every difference, ascending by code point, found once on first use by
// running PCRE2 (JIT) over the whole code space: about 10 ms. nullptr when
// PCRE2's categories could not be read; then no escape is left to PCRE2.
const std::vector<CategoryDifference>* pcre2_category_differences();

// For the escape \p{name} (\P{name} when `negated`): true when PCRE2's own
// set for it is within the utf8proc one; `missing` then receives the code
// points PCRE2 leaves out. False for unknown names or when PCRE2's set has
// code points the utf8proc one does not.
bool pcre2_property_within(std::string_view name, bool negated, RangeList& missing);

}  // namespace ferrite::tokenizer
