// GBNF parser (the grammar format of llama.cpp):
//
//   rule      ::= name "::=" alternates (newline | end)
//   alternates::= sequence ("|" sequence)*
//   sequence  ::= (item postfix?)*
//   item      ::= "literal" | [class] | [^class] | . | name | "(" alternates ")"
//   postfix   ::= * | + | ? | {m} | {m,} | {m,n} | {,n}
//
// Comments run from # to the end of the line. Inside parentheses newlines are
// whitespace; at the top level a newline ends a rule, unless the next line
// continues it with "|". Repetitions become helper rules:
//   X*      -> R ::= X R |
//   X{m,n}  -> X ... X (m times) followed by n-m nested optional rules.
#include <string>

#include "grammar/builder.h"
#include "grammar/utf8.h"

namespace ferrite::grammar {

namespace {

constexpr uint32_t kUnbounded = UINT32_MAX;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  Parser(std::string_view text, const Limits& limits) : text_(text), limits_(limits) {}

  Grammar run(const std::string& root) {
    if (text_.size() > limits_.max_text_bytes) {
      throw GrammarError(0, 0, "grammar text too large (" + std::to_string(text_.size()) +
                                   " bytes; the limit is " +
                                   std::to_string(limits_.max_text_bytes) + ")");
    }
    skip_space(true);
    if (at_end()) fail("the grammar is empty");
    while (!at_end()) {
      parse_rule();
      skip_space(true);
    }
    return b_.finish(root, text_);
  }

 private:
  std::string_view text_;
  const Limits& limits_;
  Builder b_;
  size_t pos_ = 0;
  size_t n_elements_ = 0;

  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }


  [[noreturn]] void fail_at(size_t at, const std::string& problem) const {
    size_t line = 0, column = 0;
    text_location(text_, at, &line, &column);
    throw GrammarError(line, column, problem);
  }
  [[noreturn]] void fail(const std::string& problem) const { fail_at(pos_, problem); }

  void charge(size_t n) {
    n_elements_ += n;
    if (n_elements_ > limits_.max_elements) {
      fail("grammar too large: more than " + std::to_string(limits_.max_elements) +
           " elements after expanding repetitions");
    }
  }

  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
      } else if ((c == '\n' || c == '\r') && newline_ok) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  // True when the text at pos_ is `name ::=`.
  bool starts_rule() const {
    size_t p = pos_;
    while (p < text_.size() && is_name_char(text_[p])) ++p;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  void parse_rule() {
    const size_t start = pos_;
    const std::string name = parse_name();
    const uint32_t rule = b_.user_rule(name, start);
    if (!b_.define(rule)) fail_at(start, "rule '" + name + "' is defined twice");
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    parse_alternates(rule, 0);
    if (!at_end() && peek() != '\n' && peek() != '\r' && !starts_rule()) {
      fail(std::string("unexpected '") + peek() + "'; expected a newline or the end of the rule");
    }
  }

  void parse_alternates(uint32_t rule, size_t depth) {
    if (depth > limits_.max_nesting) fail("parentheses nested too deeply");
    const bool nested = depth > 0;
    while (true) {
      Builder::Sequence seq;
      parse_sequence(rule, seq, depth);
      b_.add_alternative(rule, std::move(seq));
      if (!nested && !at_end() && peek() != '|') {
        // A following line that starts with '|' continues this rule.
        const size_t save = pos_;
        skip_space(true);
        if (peek() != '|') {
          pos_ = save;
          return;
        }
      }
      if (peek() != '|') return;
      ++pos_;
      skip_space(true);
    }
  }

  void parse_sequence(uint32_t rule, Builder::Sequence& seq, size_t depth) {
    const bool nested = depth > 0;
    size_t last_item = SIZE_MAX;  // index in seq where the last item starts
    while (!at_end()) {
      const char c = peek();
      if (c == '|' || c == ')' || c == '\n' || c == '\r') break;
      const size_t item_start = seq.size();
      if (c == '"') {
        parse_literal(seq);
      } else if (c == '[') {
        seq.push_back({ElementKind::Chars, parse_class()});
        charge(1);
      } else if (c == '.') {
        ++pos_;
        CharSet any;
        any.negated = true;
        seq.push_back({ElementKind::Chars, b_.char_set(any)});
        charge(1);
      } else if (is_name_char(c)) {
        if (starts_rule()) break;  // after "|" and a newline: the next rule begins
        const size_t at = pos_;
        const std::string name = parse_name();
        seq.push_back({ElementKind::Rule, b_.user_rule(name, at)});
        charge(1);
      } else if (c == '(') {
        const size_t open = pos_;
        ++pos_;
        skip_space(true);
        const uint32_t group = b_.helper_rule(rule);
        parse_alternates(group, depth + 1);
        if (peek() != ')') fail_at(open, "unclosed '('");
        ++pos_;
        seq.push_back({ElementKind::Rule, group});
        charge(1);
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (last_item == SIZE_MAX) fail(std::string("'") + c + "' must follow an item");
        uint32_t min = 0, max = kUnbounded;
        parse_postfix(&min, &max);
        repeat(rule, seq, last_item, min, max);
        skip_space(nested);
        continue;  // the repeated group stays the last item
      } else {
        fail(std::string("unexpected '") + c + "'");
      }
      last_item = item_start;
      skip_space(nested);
    }
  }

  uint32_t parse_char(bool in_class) {
    if (at_end()) fail(in_class ? "unterminated character class" : "unterminated string literal");
    if (peek() != '\\') {
      uint32_t cp = 0;
      const size_t n = utf8_decode_one(text_.substr(pos_), &cp);
      if (n == 0) fail("invalid UTF-8 in the grammar text");
      pos_ += n;
      return cp;
    }
    const size_t esc = pos_;
    ++pos_;
    const char c = peek();
    ++pos_;
    switch (c) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case '0': return 0;
      case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/': case '.':
        return static_cast<uint8_t>(c);
      case 'x': return parse_hex(esc, 2);
      case 'u': return parse_hex(esc, 4);
      case 'U': return parse_hex(esc, 8);
      default:
        fail_at(esc, c == '\0' ? std::string("unterminated escape sequence")
                               : std::string("unknown escape sequence '\\") + c + "'");
    }
  }

  uint32_t parse_hex(size_t esc, int digits) {
    uint64_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) fail_at(esc, "expected " + std::to_string(digits) + " hex digits in escape");
      v = v * 16 + static_cast<uint64_t>(h);
      ++pos_;
    }
    if (v > kMaxCodePoint) fail_at(esc, "code point beyond U+10FFFF");
    return static_cast<uint32_t>(v);
  }

  void parse_literal(Builder::Sequence& seq) {
    const size_t open = pos_;
    ++pos_;
    while (true) {
      if (at_end()) fail_at(open, "unterminated string literal");
      if (peek() == '"') break;
      CharSet one;
      const uint32_t cp = parse_char(false);
      one.ranges.push_back({cp, cp});
      seq.push_back({ElementKind::Chars, b_.char_set(std::move(one))});
      charge(1);
    }
    ++pos_;
  }

  uint32_t parse_class() {
    const size_t open = pos_;
    ++pos_;
    CharSet cs;
    if (peek() == '^') {
      cs.negated = true;
      ++pos_;
    }
    while (true) {
      if (at_end()) fail_at(open, "unterminated character class");
      if (peek() == ']') break;
      const size_t at = pos_;
      const uint32_t lo = parse_char(true);
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        hi = parse_char(true);
        if (hi < lo) fail_at(at, "character range is out of order");
      }
      cs.ranges.push_back({lo, hi});
    }
    ++pos_;
    return b_.char_set(std::move(cs));
  }

  uint32_t parse_count() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(peek() - '0');
      if (v > limits_.max_repetition) {
        fail_at(start, "repetition count above the limit of " +
                           std::to_string(limits_.max_repetition));
      }
      ++pos_;
    }
    if (pos_ == start) fail("expected a number");
    return static_cast<uint32_t>(v);
  }

  void parse_postfix(uint32_t* min, uint32_t* max) {
    const char c = peek();
    ++pos_;
    if (c == '*') {
      *min = 0, *max = kUnbounded;
    } else if (c == '+') {
      *min = 1, *max = kUnbounded;
    } else if (c == '?') {
      *min = 0, *max = 1;
    } else {  // '{'
      const size_t open = pos_ - 1;
      skip_space(false);
      *min = peek() == ',' ? 0 : parse_count();
      skip_space(false);
      if (peek() == ',') {
        ++pos_;
        skip_space(false);
        *max = peek() == '}' ? kUnbounded : parse_count();
      } else {
        *max = *min;
      }
      skip_space(false);
      if (peek() != '}') fail_at(open, "expected '}' to close the repetition");
      ++pos_;
      if (*max < *min) fail_at(open, "repetition maximum is below its minimum");
    }
  }

  // Replaces seq[from..] (the last item) by its repetition {min,max}.
  void repeat(uint32_t rule, Builder::Sequence& seq, size_t from, uint32_t min, uint32_t max) {
    Element item;
    if (seq.size() - from == 1) {
      item = seq[from];
    } else {
      const uint32_t group = b_.helper_rule(rule);
      b_.add_alternative(group, Builder::Sequence(seq.begin() + static_cast<long>(from), seq.end()));
      item = {ElementKind::Rule, group};
    }
    seq.resize(from);
    charge(min);
    seq.insert(seq.end(), min, item);
    if (max == kUnbounded) {
      const uint32_t star = b_.helper_rule(rule);
      b_.add_alternative(star, {item, {ElementKind::Rule, star}});
      b_.add_alternative(star, {});
      charge(5);
      seq.push_back({ElementKind::Rule, star});
      return;
    }
    // X{0,k} as nested optionals: O_1 ::= X |   O_i ::= X O_{i-1} |
    uint32_t inner = UINT32_MAX;
    for (uint32_t i = min; i < max; ++i) {
      const uint32_t opt = b_.helper_rule(rule);
      Builder::Sequence alt{item};
      if (inner != UINT32_MAX) alt.push_back({ElementKind::Rule, inner});
      b_.add_alternative(opt, std::move(alt));
      b_.add_alternative(opt, {});
      charge(5);
      inner = opt;
    }
    if (inner != UINT32_MAX) seq.push_back({ElementKind::Rule, inner});
  }
};

}  // namespace

Grammar Grammar::parse(std::string_view text, std::string_view root, const Limits& limits) {
  Parser p(text, limits);
  return p.run(std::string(root));
}

}  // namespace ferrite::grammar
