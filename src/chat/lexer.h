// Jinja2 lexer: splits a template into text and the tokens of its tags, with
// Jinja's whitespace control applied on the way (`{%-`, `-%}`, `{%+`, `+%}`
// and the trim_blocks / lstrip_blocks options that Hugging Face's
// apply_chat_template turns on). Raw blocks and comments are resolved here.
#pragma once

#include <string>
#include <vector>

namespace ferrite::chat {

enum class TokenType {
  Text,        // literal output
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,      // value already unescaped
  Integer,
  Float,
  Operator,    // + - * / // % ** ~ == != < <= > >= = . : | , ( ) [ ] { } ;
  End,
};

struct Token {
  TokenType type;
  std::string value;
  int line = 0;
  int column = 0;
};

struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws TemplateSyntaxError (with line and column) on an unterminated tag,
// comment, string or raw block, or a character that starts no token.
std::vector<Token> tokenize(const std::string& source, const LexerOptions& options = {});

}  // namespace ferrite::chat
