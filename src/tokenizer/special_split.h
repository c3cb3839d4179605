// Internal: cutting a text at the special tokens it contains. Tokens are
// tried longest first; each one is found (leftmost, non-overlapping) in the
// text fragments that remain. Control and unknown tokens take part only when
// `parse_special` is set; user-defined tokens always do. LSTRIP/RSTRIP
// attributes swallow the whitespace beside a match. A control or unknown
// token whose match would overlap one of the `literal` byte ranges (sorted,
// disjoint) is not matched there: that text is read as plain text.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace ferrite::tokenizer {

struct Fragment {
  int32_t token;   // kNoToken for a run of text
  uint32_t begin;  // text range (runs of text only)
  uint32_t end;
};

struct TextRange;

void split_special(const Vocab& v, std::string_view text, bool parse_special, std::vector<Fragment>& out,
                   std::span<const TextRange> literal = {});

}  // namespace ferrite::tokenizer
