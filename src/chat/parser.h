// Jinja2 parser: tokens (lexer.h) to a syntax tree (ast.h), with Jinja's
// operator precedence. Throws TemplateSyntaxError with line and column.
#pragma once

#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace ferrite::chat {

// Nesting deeper than this (brackets, operators, blocks) is refused so that
// a hostile template cannot exhaust the stack.
constexpr int kMaxParseDepth = 200;
// Expression trees taller than this are refused too (`1+1+...+1`,
// `x|f|f|...` build them without recursion in the parser, but evaluating
// them recurses).
constexpr int kMaxExprHeight = 400;

Body parse_template(const std::vector<Token>& tokens);

}  // namespace ferrite::chat
