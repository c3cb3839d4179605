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
// (?-i:..) so that case folding cannot widen it; a property escape inside a
// class under (?i) cannot be made exact that way and is rejected.
#pragma once

#include <string>
#include <string_view>

namespace ferrite::tokenizer {

// Returns the rewritten pattern (UTF-8, for PCRE2 with PCRE2_UTF). Throws
// ModelError for constructs the rewrite cannot keep exact: extended mode
// (?x), a property escape inside a class under (?i), a property escape as a
// range end.
std::string rewrite_unicode_properties(std::string_view pattern);

}  // namespace ferrite::tokenizer
