// Code-point range lists of the Unicode general categories (from utf8proc,
// Unicode 15 in Debian 12) and of the White_Space property, for spelling
// regex property escapes out as explicit classes. Surrogates (U+D800..U+DFFF)
// never appear in any list: they cannot occur in UTF-8 text.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace ferrite::tokenizer {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;
constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;

// Inclusive range of code points.
struct CodepointRange {
  uint32_t first;
  uint32_t last;
  bool operator==(const CodepointRange&) const = default;
};
// Sorted, disjoint, non-adjacent ranges.
using RangeList = std::vector<CodepointRange>;

// Ranges of a general category or category group, named as in regex property
// escapes: "L", "Lu", ..., "Cn", "LC" (or "L&": Lu Ll Lt), "Any". Names match
// loosely like PCRE2's (case, spaces, '_' and '-' ignored). Returns nullptr
// for any other name (scripts, binary properties). The lists are built once,
// on first use, from utf8proc_category over every code point.
const RangeList* category_ranges(std::string_view name);

// The utf8proc categories (UTF8PROC_CATEGORY_* values) making up a category
// named as for category_ranges; nullptr for other names. `canonical`, when
// given, receives the name as PCRE2 spells it ("Lu", "L&", "Any").
const std::vector<int>* category_members(std::string_view name, std::string* canonical = nullptr);

// Ranges of the White_Space property (is_whitespace in unicode.h).
const RangeList& whitespace_ranges();

// Union of two range lists.
RangeList union_ranges(const RangeList& a, const RangeList& b);

// Every code point (surrogates excluded) that is not in `a`.
RangeList complement_ranges(const RangeList& a);

// True when `cpt` lies in one of `ranges` (binary search).
bool ranges_contain(const RangeList& ranges, uint32_t cpt);

}  // namespace ferrite::tokenizer
