// Jinja2 lexer. See lexer.h. Follows Jinja's rules: newlines are normalized
// to "\n" and one trailing newline is dropped; `-` strips all whitespace on
// its side of a tag; lstrip_blocks removes the spaces and tabs before a block
// or comment tag that starts its line; trim_blocks removes the first newline
// after a block or comment tag. Brackets opened inside a tag must close
// before the tag can end (so `{{ {'a': {}} }}` works).
#include "chat/lexer.h"

#include <algorithm>
#include <cstring>

#include "chat/error.h"

namespace ferrite::chat {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_inline_space(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

std::string normalize_newlines(const std::string& in, bool keep_trailing_newline) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') {
      out += '\n';
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      out += in[i];
    }
  }
  if (!keep_trailing_newline && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

void rstrip_all(std::string& s) {
  while (!s.empty() && is_space(s.back())) s.pop_back();
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(const std::string& source, const LexerOptions& opt)
      : src_(normalize_newlines(source, opt.keep_trailing_newline)), opt_(opt) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t start = find_tag(pos_);
      std::string text = src_.substr(pos_, (start == std::string::npos ? src_.size() : start) - pos_);
      if (start == std::string::npos) {
        emit_text(std::move(text), pos_);
        break;
      }
      const char kind = src_[start + 1];  // '{', '%' or '#'
      const char sign = start + 2 < src_.size() ? src_[start + 2] : '\0';
      const bool has_sign = sign == '-' || sign == '+';
      if (sign == '-') {
        rstrip_all(text);
      } else if (sign != '+' && opt_.lstrip_blocks && kind != '{') {
        lstrip_line(text, line_starting);
      }
      emit_text(std::move(text), pos_);
      const size_t after = start + 2 + (has_sign ? 1 : 0);
      if (kind == '#') {
        line_starting = skip_comment(start, after);
      } else if (kind == '%' && is_raw_begin(after)) {
        line_starting = lex_raw(start, after);
      } else {
        line_starting = lex_tag(start, after, kind == '%');
      }
    }
    tokens_.push_back(Token{TokenType::End, "", line_of(src_.size()), col_of(src_.size())});
    return std::move(tokens_);
  }

 private:
  int line_of(size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    return static_cast<int>(it - line_starts_.begin());
  }
  int col_of(size_t pos) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    return static_cast<int>(pos - *(it - 1)) + 1;
  }
  [[noreturn]] void fail(const std::string& what, size_t pos) const {
    throw TemplateSyntaxError(what, line_of(pos), col_of(pos));
  }

  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void emit_text(std::string text, size_t pos) {
    if (!text.empty()) tokens_.push_back(Token{TokenType::Text, std::move(text), line_of(pos), col_of(pos)});
  }

  // lstrip_blocks: drop the spaces before a tag when only spaces precede it on its line.
  static void lstrip_line(std::string& text, bool line_starting) {
    const size_t nl = text.rfind('\n');
    const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting) return;
    for (size_t i = l_pos; i < text.size(); ++i) {
      if (!is_inline_space(text[i])) return;
    }
    text.resize(l_pos);
  }

  // After a closing delimiter at `pos` (just past it), applies `-` / trim
  // and returns the new position. Returns whether a newline was consumed last.
  bool finish_tag(size_t pos, char sign, bool trims) {
    if (sign == '-') {
      while (pos < src_.size() && is_space(src_[pos])) ++pos;
    } else if (sign != '+' && trims && opt_.trim_blocks && pos < src_.size() && src_[pos] == '\n') {
      ++pos;
    }
    pos_ = pos;
    return pos > 0 && src_[pos - 1] == '\n';
  }

  bool skip_comment(size_t start, size_t from) {
    const size_t end = src_.find("#}", from);
    if (end == std::string::npos) fail("unterminated comment", start);
    const char sign = end > from && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : '\0';
    return finish_tag(end + 2, sign, true);
  }

  // `{% raw %}` (with optional whitespace control) at `from` past "{%[-+]".
  bool is_raw_begin(size_t from) const {
    size_t p = from;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) return false;
    return true;
  }

  bool lex_raw(size_t start, size_t from) {
    size_t p = from;
    while (is_space(src_[p])) ++p;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    bool strip_after = false;
    if (p < src_.size() && src_[p] == '-') {
      strip_after = true;
      ++p;
    }
    if (src_.compare(p, 2, "%}") != 0) fail("expected '%}' after 'raw'", p);
    p += 2;
    if (strip_after) {
      while (p < src_.size() && is_space(src_[p])) ++p;
    }
    // Find {%[-+]? endraw [-+]?%}
    for (size_t q = p; q + 1 < src_.size(); ++q) {
      if (src_[q] != '{' || src_[q + 1] != '%') continue;
      size_t r = q + 2;
      const char sign = r < src_.size() && (src_[r] == '-' || src_[r] == '+') ? src_[r] : '\0';
      if (sign) ++r;
      while (r < src_.size() && is_space(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      while (r < src_.size() && is_space(src_[r])) ++r;
      char end_sign = '\0';
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) end_sign = src_[r++];
      if (src_.compare(r, 2, "%}") != 0) fail("expected '%}' after 'endraw'", r);
      std::string text = src_.substr(p, q - p);
      if (sign == '-') {
        rstrip_all(text);
      } else if (sign != '+' && opt_.lstrip_blocks) {
        lstrip_line(text, false);
      }
      emit_text(std::move(text), p);
      return finish_tag(r + 2, end_sign, true);
    }
    fail("unterminated raw block", start);
  }

  bool lex_tag(size_t start, size_t p, bool block) {
    tokens_.push_back(Token{block ? TokenType::BlockBegin : TokenType::VarBegin, "", line_of(start), col_of(start)});
    const char close = block ? '%' : '}';
    std::vector<char> brackets;
    while (true) {
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (p >= src_.size()) fail(block ? "unterminated block tag '{%'" : "unterminated variable tag '{{'", start);
      if (brackets.empty()) {
        size_t q = p;
        char sign = '\0';
        if ((src_[q] == '-' || src_[q] == '+') && q + 2 < src_.size() + 0 && src_[q + 1] == close &&
            src_[q + 2] == '}') {
          sign = src_[q];
          ++q;
        }
        if (q + 1 < src_.size() && src_[q] == close && src_[q + 1] == '}') {
          tokens_.push_back(Token{block ? TokenType::BlockEnd : TokenType::VarEnd, "", line_of(p), col_of(p)});
          return finish_tag(q + 2, sign, block);
        }
      }
      p = lex_one(p, brackets);
    }
  }

  size_t lex_one(size_t p, std::vector<char>& brackets) {
    const char c = src_[p];
    const int line = line_of(p);
    const int col = col_of(p);
    if (is_name_start(c)) {
      size_t q = p;
      while (q < src_.size() && is_name_char(src_[q])) ++q;
      tokens_.push_back(Token{TokenType::Name, src_.substr(p, q - p), line, col});
      return q;
    }
    if (is_digit(c)) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* kTwo[] = {"**", "//", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (src_.compare(p, 2, op) == 0) {
        tokens_.push_back(Token{TokenType::Operator, op, line, col});
        return p + 2;
      }
    }
    if (std::strchr("+-/*%~[](){}><=.:|,;", c) != nullptr && c != '\0') {
      if (c == '(' || c == '[' || c == '{') {
        brackets.push_back(c);
      } else if (c == ')' || c == ']' || c == '}') {
        const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (brackets.empty() || brackets.back() != open) fail(std::string("unexpected '") + c + "'", p);
        brackets.pop_back();
      }
      tokens_.push_back(Token{TokenType::Operator, std::string(1, c), line, col});
      return p + 1;
    }
    fail(std::string("unexpected character '") + c + "'", p);
  }

  size_t lex_digits(size_t q) const {
    while (q < src_.size() && (is_digit(src_[q]) || (src_[q] == '_' && q + 1 < src_.size() && is_digit(src_[q + 1])))) {
      ++q;
    }
    return q;
  }

  size_t lex_number(size_t p) {
    size_t q = lex_digits(p);
    bool is_float = false;
    if (q + 1 < src_.size() && src_[q] == '.' && is_digit(src_[q + 1])) {
      is_float = true;
      q = lex_digits(q + 1);
    }
    if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
      size_t r = q + 1;
      if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
      if (r < src_.size() && is_digit(src_[r])) {
        is_float = true;
        q = lex_digits(r);
      }
    }
    std::string text;
    for (size_t i = p; i < q; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    tokens_.push_back(Token{is_float ? TokenType::Float : TokenType::Integer, text, line_of(p), col_of(p)});
    return q;
  }

  size_t lex_string(size_t p) {
    const char quote = src_[p];
    std::string value;
    size_t q = p + 1;
    while (true) {
      if (q >= src_.size()) fail("unterminated string literal", p);
      const char c = src_[q];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++q;
        continue;
      }
      if (q + 1 >= src_.size()) fail("unterminated string literal", p);
      const char e = src_[q + 1];
      q += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t i = 0; i < n; ++i) {
            const int h = q + i < src_.size() ? hex_value(src_[q + i]) : -1;
            if (h < 0) fail("truncated \\" + std::string(1, e) + " escape in string literal", q - 2);
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          if (cp > 0x10FFFF) fail("invalid unicode escape in string literal", q - 2);
          append_utf8(value, cp);
          q += n;
          break;
        }
        default:
          value += '\\';
          value += e;
      }
    }
    tokens_.push_back(Token{TokenType::String, std::move(value), line_of(p), col_of(p)});
    return q + 1;
  }

  std::string src_;
  LexerOptions opt_;
  size_t pos_ = 0;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const LexerOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace ferrite::chat
