#include "chat/str_util.h"

#include "chat/utf8.h"

namespace ferrite::chat {
namespace {
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
char to_upper(char c) { return is_lower(c) ? static_cast<char>(c - 'a' + 'A') : c; }
char to_lower(char c) { return is_upper(c) ? static_cast<char>(c - 'A' + 'a') : c; }
}  // namespace

bool is_py_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1f);
}

std::string py_strip(const std::string& s, const std::string* chars, bool left, bool right) {
  if (chars && !is_ascii(*chars)) {  // strip by code points
    auto cps = utf8_decode(s);
    auto set = utf8_decode(*chars);
    auto in_set = [&](uint32_t c) {
      for (uint32_t x : set) {
        if (x == c) return true;
      }
      return false;
    };
    size_t b = 0, e = cps.size();
    if (left) {
      while (b < e && in_set(cps[b])) ++b;
    }
    if (right) {
      while (e > b && in_set(cps[e - 1])) --e;
    }
    return utf8_encode(cps, b, e);
  }
  auto strip_it = [&](char c) { return chars ? chars->find(c) != std::string::npos : is_py_space(c); };
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e && strip_it(s[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(s[e - 1])) --e;
  }
  return s.substr(b, e - b);
}

std::vector<std::string> py_split(const std::string& s, const std::string* sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> out;
  if (!sep) {
    // Runs of whitespace; leading/trailing whitespace ignored.
    if (!from_right) {
      size_t i = 0;
      while (true) {
        while (i < s.size() && is_py_space(s[i])) ++i;
        if (i >= s.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
          size_t e = s.size();
          while (e > i && is_py_space(s[e - 1])) --e;
          out.push_back(s.substr(i, e - i));
          break;
        }
        size_t j = i;
        while (j < s.size() && !is_py_space(s[j])) ++j;
        out.push_back(s.substr(i, j - i));
        i = j;
      }
      return out;
    }
    size_t i = s.size();
    while (true) {
      while (i > 0 && is_py_space(s[i - 1])) --i;
      if (i == 0) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        size_t b = 0;
        while (b < i && is_py_space(s[b])) ++b;
        out.insert(out.begin(), s.substr(b, i - b));
        break;
      }
      size_t j = i;
      while (j > 0 && !is_py_space(s[j - 1])) --j;
      out.insert(out.begin(), s.substr(j, i - j));
      i = j;
    }
    return out;
  }
  if (!from_right) {
    size_t start = 0;
    while (true) {
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) break;
      size_t p = s.find(*sep, start);
      if (p == std::string::npos) break;
      out.push_back(s.substr(start, p - start));
      start = p + sep->size();
    }
    out.push_back(s.substr(start));
    return out;
  }
  size_t end = s.size();
  std::vector<std::string> rev;
  while (true) {
    if (maxsplit >= 0 && static_cast<int64_t>(rev.size()) == maxsplit) break;
    if (end < sep->size()) break;
    size_t p = s.rfind(*sep, end - sep->size());
    if (p == std::string::npos) break;
    rev.push_back(s.substr(p + sep->size(), end - p - sep->size()));
    end = p;
  }
  rev.push_back(s.substr(0, end));
  return std::vector<std::string>(rev.rbegin(), rev.rend());
}

std::vector<std::string> py_splitlines(const std::string& s, bool keepends) {
  std::vector<std::string> out;
  size_t start = 0;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) {
      size_t eol = i + 1;
      if (c == '\r' && eol < s.size() && s[eol] == '\n') ++eol;
      out.push_back(s.substr(start, (keepends ? eol : i) - start));
      start = i = eol;
    } else {
      ++i;
    }
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

std::string py_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` between every character (and at both ends).
    auto cps = utf8_decode(s);
    int64_t done = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i < cps.size()) utf8_append(out, cps[i]);
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t p = s.find(from, start);
    if (p == std::string::npos) break;
    out.append(s, start, p - start);
    out += to;
    start = p + from.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return out;
}

std::string py_upper(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = to_upper(c);
  return out;
}

std::string py_lower(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = to_lower(c);
  return out;
}

std::string py_title(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    const bool cased = is_lower(c) || is_upper(c);
    if (cased) c = prev_cased ? to_lower(c) : to_upper(c);
    prev_cased = cased;
  }
  return out;
}

std::string py_capitalize(const std::string& s) {
  std::string out = py_lower(s);
  if (!out.empty()) out[0] = to_upper(out[0]);
  return out;
}

int64_t py_count(const std::string& s, const std::string& needle) {
  if (needle.empty()) return static_cast<int64_t>(utf8_length(s)) + 1;
  int64_t n = 0;
  size_t p = 0;
  while ((p = s.find(needle, p)) != std::string::npos) {
    ++n;
    p += needle.size();
  }
  return n;
}

}  // namespace ferrite::chat
