// UTF-8 helpers: Python strings index code points, templates store UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferrite::chat {

// Code points of `s`; invalid bytes decode as themselves (U+0080..U+00FF range
// is not reused: each invalid byte becomes U+DC80+byte as Python's
// surrogateescape does, and encodes back to the same byte).
std::vector<uint32_t> utf8_decode(const std::string& s);
std::string utf8_encode(const std::vector<uint32_t>& cps, size_t begin, size_t end);
void utf8_append(std::string& out, uint32_t cp);
// Number of code points.
size_t utf8_length(const std::string& s);
bool is_ascii(const std::string& s);

}  // namespace ferrite::chat
