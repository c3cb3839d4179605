// String operations shared by Python string methods and Jinja filters.
#pragma once

#include <string>
#include <vector>

namespace ferrite::chat {

// Python's str.isspace() for one byte (ASCII whitespace and \x1c-\x1f).
bool is_py_space(char c);
// strip/lstrip/rstrip: `chars` null means whitespace.
std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right);
// str.split / str.rsplit: `sep` null means runs of whitespace.
std::vector<std::string> py_split(const std::string& s, const std::string* sep, int64_t maxsplit, bool from_right);
std::vector<std::string> py_splitlines(const std::string& s, bool keepends);
std::string py_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count);
std::string py_upper(const std::string& s);
std::string py_lower(const std::string& s);
// str.title(): upper-case after an uncased character, lower-case otherwise.
std::string py_title(const std::string& s);
std::string py_capitalize(const std::string& s);
// Number of non-overlapping occurrences (Python's count; empty needle: len+1).
int64_t py_count(const std::string& s, const std::string& needle);

}  // namespace ferrite::chat
