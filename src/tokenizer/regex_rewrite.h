// Spells the Unicode property escapes of a PCRE2 pattern out as explicit
// code-point classes, so that the categories come from utf8proc (Unicode 15)
// instead of PCRE2's own, older tables.
//
// Rewritten: \p{..} / \P{..} / \p{^..} / \pX for every general category and
// group (L, Lu, Ll, Lt, Lm, Lo, LC/L&, M*, N*, P*, S*, Z*, C*, Any), and
// \s / \S as the White_Space property (U+0085 included, as the reference
// does). Outside a class an escape becomes a class of its own
// (\p{L} -> [\x{41}-\x{5a}...]); inside a class its ranges are spliced into
// that class, all escapes of one class merged into one sorted list.
// Left alone: other property names (scripts, binary properties), \d \w \b
// (ASCII without PCRE2_UCP, as with the reference's std::regex), escapes
// inside \Q..\E, and everything else.
//
// Case-insensitive scopes: a class made outside a class is wrapped in
// (?-i:..) so that case folding cannot widen it; explicit ranges inside a
// class under (?i) cannot be protected that way and are rejected.
#pragma once

#include <string>
#include <string_view>

namespace ferrite::tokenizer {

// How a category escape is spelled out.
enum class PropertyForm {
  // PCRE2's own escape where its set lies within the Unicode 15 one (see
  // pcre2_categories.h), plus explicit ranges for what it lacks: exact, and
  // as fast to match as the plain escape. Explicit ranges elsewhere.
  kNativeWhereExact,
  // Explicit ranges only.
  kExplicitRanges,
};

// Returns the rewritten pattern (UTF-8, for PCRE2 with PCRE2_UTF). Throws
// ModelError for constructs the rewrite cannot keep exact: extended mode
// (?x), explicit ranges inside a class under (?i), a property escape as a
// range end.
std::string rewrite_unicode_properties(std::string_view pattern,
                                       PropertyForm form = PropertyForm::kNativeWhereExact);

}  // namespace ferrite::tokenizer
