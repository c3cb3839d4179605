// Whether a grammar accepts the whole of a text (shared by the grammar tests).
#pragma once

#include <string>

#include "grammar/matcher.h"

namespace ferrite::grammar {

inline bool full_match(const Grammar& g, const std::string& text) {
  Matcher m(g);
  return m.accept_bytes(text) && m.is_complete();
}

}  // namespace ferrite::grammar
