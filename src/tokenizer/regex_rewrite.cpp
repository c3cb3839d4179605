#include "tokenizer/regex_rewrite.h"

#include <vector>

#include "core/error.h"
#include "tokenizer/pcre2_categories.h"
#include "tokenizer/unicode_ranges.h"

namespace ferrite::tokenizer {
namespace {

constexpr std::string_view kOptionLetters = "imnsxJUa^-";

void append_codepoint(std::string& out, uint32_t c) {
  static constexpr char kHex[] = "0123456789abcdef";
  char buf[8];
  int n = 0;
  do {
    buf[n++] = kHex[c & 0xF];
    c >>= 4;
  } while (c);
  out += "\\x{";
  while (n) out.push_back(buf[--n]);
  out.push_back('}');
}

void append_ranges(std::string& out, const RangeList& ranges) {
  for (const auto& r : ranges) {
    append_codepoint(out, r.first);
    if (r.last != r.first) {
      out.push_back('-');
      append_codepoint(out, r.last);
    }
  }
}

// What an escape stands for: a PCRE2 escape (possibly none) and explicit
// ranges.
struct SetItem {
  std::string native;
  RangeList ranges;
};

// The class standing for `set` outside any class.
std::string standalone_class(const SetItem& item, bool caseless) {
  if (!item.native.empty() && item.ranges.empty()) return item.native;  // immune to (?i)
  std::string cls;
  if (item.native.empty() && item.ranges.empty()) {
    cls = "(?!)";
  } else {
    cls = "[" + item.native;
    append_ranges(cls, item.ranges);
    cls += "]";
  }
  return caseless ? "(?-i:" + cls + ")" : cls;
}

// Recognizes a rewritable escape (\s \S \p.. \P..) at `i`: fills `item`
// (the negation applied) and `len` (its length in the pattern).
bool parse_set_escape(std::string_view p, size_t i, PropertyForm form, SetItem& item, size_t& len) {
  if (i + 1 >= p.size() || p[i] != '\\') return false;
  const char kind = p[i + 1];
  item.native.clear();
  if (kind == 's' || kind == 'S') {
    item.ranges = kind == 's' ? whitespace_ranges() : complement_ranges(whitespace_ranges());
    len = 2;
    return true;
  }
  if ((kind != 'p' && kind != 'P') || i + 2 >= p.size()) return false;
  bool negated = kind == 'P';
  std::string_view name;
  if (p[i + 2] == '{') {
    const size_t close = p.find('}', i + 3);
    if (close == std::string_view::npos) return false;
    name = p.substr(i + 3, close - (i + 3));
    len = close + 1 - i;
    if (!name.empty() && name[0] == '^') {
      negated = !negated;
      name.remove_prefix(1);
    }
  } else {
    name = p.substr(i + 2, 1);
    len = 3;
  }
  const RangeList* exact = category_ranges(name);
  std::string canonical;
  if (!exact || !category_members(name, &canonical)) return false;
  if (form == PropertyForm::kNativeWhereExact && pcre2_property_within(name, negated, item.ranges)) {
    item.native = std::string(negated ? "\\P{" : "\\p{") + canonical + "}";
    return true;
  }
  item.ranges = negated ? complement_ranges(*exact) : *exact;
  return true;
}

// End (one past) of a \Q..\E quote starting at `i`.
size_t quote_end(std::string_view p, size_t i) {
  const size_t e = p.find("\\E", i + 2);
  return e == std::string_view::npos ? p.size() : e + 2;
}

// Length of a plain escape at `i` (\c takes the next character too).
size_t plain_escape_len(std::string_view p, size_t i) {
  if (i + 1 >= p.size()) return 1;
  return (p[i + 1] == 'c' && i + 2 < p.size()) ? 3 : 2;
}

class Rewriter {
 public:
  Rewriter(std::string_view p, PropertyForm form) : p_(p), form_(form) {}

  std::string run() {
    while (i_ < p_.size()) {
      const char c = p_[i_];
      if (c == '\\') {
        escape();
      } else if (c == '[') {
        char_class();
      } else if (c == '(') {
        group_open();
      } else if (c == ')') {
        if (!saved_.empty()) {
          caseless_ = saved_.back();
          saved_.pop_back();
        }
        out_.push_back(c);
        ++i_;
      } else {
        out_.push_back(c);
        ++i_;
      }
    }
    return out_;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw ModelError("pre-tokenizer regex: " + why + " (" + std::string(p_) + ")");
  }

  void escape() {
    SetItem set;
    size_t len = 0;
    if (i_ + 1 < p_.size() && p_[i_ + 1] == 'Q') {
      const size_t end = quote_end(p_, i_);
      out_.append(p_.substr(i_, end - i_));
      i_ = end;
    } else if (parse_set_escape(p_, i_, form_, set, len)) {
      out_ += standalone_class(set, caseless_);
      i_ += len;
    } else {
      len = plain_escape_len(p_, i_);
      out_.append(p_.substr(i_, len));
      i_ += len;
    }
  }

  // '(' : a comment, an option setting, or a group.
  void group_open() {
    const size_t n = p_.size();
    if (i_ + 2 < n && p_[i_ + 1] == '?' && p_[i_ + 2] == '#') {
      const size_t e = p_.find(')', i_);
      const size_t end = e == std::string_view::npos ? n : e + 1;
      out_.append(p_.substr(i_, end - i_));
      i_ = end;
      return;
    }
    if (i_ + 1 < n && p_[i_ + 1] == '?') {
      size_t j = i_ + 2;
      while (j < n && kOptionLetters.find(p_[j]) != std::string_view::npos) ++j;
      if (j > i_ + 2 && j < n && (p_[j] == ')' || p_[j] == ':')) {
        const bool scoped = p_[j] == ':';
        if (scoped) saved_.push_back(caseless_);
        apply_options(p_.substr(i_ + 2, j - (i_ + 2)));
        out_.append(p_.substr(i_, j + 1 - i_));
        i_ = j + 1;
        return;
      }
    }
    saved_.push_back(caseless_);
    out_.push_back('(');
    ++i_;
  }

  void apply_options(std::string_view letters) {
    bool on = true;
    for (const char l : letters) {
      if (l == '-') {
        on = false;
      } else if (l == '^') {
        caseless_ = false;
      } else if (l == 'i') {
        caseless_ = on;
      } else if (l == 'x' && on) {
        fail("extended mode (?x) is not supported");
      }
    }
  }

  // '[' : copies the class, splicing the ranges of its property escapes in
  // at the place of the first one.
  void char_class() {
    const size_t n = p_.size();
    std::string cls = "[";
    size_t j = i_ + 1;
    bool negated = false;
    if (j < n && p_[j] == '^') {
      cls.push_back('^');
      negated = true;
      ++j;
    }
    const size_t items_start = cls.size();
    if (j < n && p_[j] == ']') {
      cls.push_back(']');
      ++j;
    }
    SetItem set;
    bool has_set = false;
    size_t insert_at = 0;
    bool after_range_dash = false;  // the last item was a '-' range operator
    bool after_set = false;         // the last item was a property escape
    while (j < n && p_[j] != ']') {
      const char c = p_[j];
      SetItem s;
      size_t len = 0;
      if (c == '[' && j + 1 < n && (p_[j + 1] == ':' || p_[j + 1] == '.' || p_[j + 1] == '=')) {
        const char term[] = {p_[j + 1], ']', '\0'};
        const size_t e = p_.find(term, j + 2);
        len = e == std::string_view::npos ? 1 : e + 2 - j;  // POSIX class, or a literal '['
        cls.append(p_.substr(j, len));
      } else if (c == '\\' && j + 1 < n && p_[j + 1] == 'Q') {
        len = quote_end(p_, j) - j;
        cls.append(p_.substr(j, len));
      } else if (c == '\\' && parse_set_escape(p_, j, form_, s, len)) {
        if (after_range_dash) fail("a property escape cannot end a range");
        if (!has_set) insert_at = cls.size();
        has_set = true;
        if (set.native.find(s.native) == std::string::npos) set.native += s.native;
        set.ranges = union_ranges(set.ranges, s.ranges);
        j += len;
        after_set = true;
        after_range_dash = false;
        continue;
      } else if (c == '\\') {
        len = plain_escape_len(p_, j);
        cls.append(p_.substr(j, len));
      } else if (c == '-') {
        const bool literal = (cls.size() == items_start && !has_set) || (j + 1 < n && p_[j + 1] == ']');
        if (after_set && !literal) fail("a property escape cannot start a range");
        cls.push_back(c);
        len = 1;
        after_range_dash = !literal;
        after_set = false;
        j += len;
        continue;
      } else {
        cls.push_back(c);
        len = 1;
      }
      j += len;
      after_set = false;
      after_range_dash = false;
    }
    if (j >= n) {
      // Unterminated: left for PCRE2 to report.
      out_.append(p_.substr(i_));
      i_ = n;
      return;
    }
    i_ = j + 1;
    if (!has_set) {
      out_.append(cls);
      out_.push_back(']');
      return;
    }
    if (caseless_ && !set.ranges.empty()) fail("explicit ranges inside a class under (?i) cannot be kept exact");
    const bool other_items = cls.size() > items_start;
    if (set.native.empty() && set.ranges.empty() && !other_items) {
      out_ += negated ? standalone_class(SetItem{"", complement_ranges({})}, false) : "(?!)";
      return;
    }
    std::string items = set.native;
    append_ranges(items, set.ranges);
    cls.insert(insert_at, items);
    out_.append(cls);
    out_.push_back(']');
  }

  std::string_view p_;
  PropertyForm form_;
  size_t i_ = 0;
  std::string out_;
  bool caseless_ = false;
  std::vector<bool> saved_;  // caseless state outside each open group
};

}  // namespace

std::string rewrite_unicode_properties(std::string_view pattern, PropertyForm form) {
  return Rewriter(pattern, form).run();
}

}  // namespace ferrite::tokenizer
