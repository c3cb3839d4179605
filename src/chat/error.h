// Errors of the chat template engine. Every failure a template can cause
// (bad syntax, a runtime type error, `raise_exception`, a sandbox limit) is
// one of these, carrying the template line (and column for syntax errors).
#pragma once

#include <string>

#include "core/error.h"

namespace ferrite::chat {

class TemplateError : public InvalidArgument {
 public:
  TemplateError(const std::string& what, int line, int column)
      : InvalidArgument(format(what, line, column)), message_(what), line_(line), column_(column) {}
  const std::string& message() const { return message_; }
  int line() const { return line_; }      // 1-based; 0 when unknown
  int column() const { return column_; }  // 1-based; 0 when unknown

 private:
  static std::string format(const std::string& what, int line, int column) {
    if (line <= 0) return "chat template: " + what;
    std::string where = "chat template line " + std::to_string(line);
    if (column > 0) where += ", column " + std::to_string(column);
    return where + ": " + what;
  }
  std::string message_;
  int line_;
  int column_;
};

// The source does not parse.
class TemplateSyntaxError : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

// Evaluation failed: a type error, an undefined value used where Jinja
// refuses it, an unknown filter, an unsafe attribute.
class TemplateRenderError : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

// The template called raise_exception(message).
class TemplateRaisedError : public TemplateRenderError {
 public:
  using TemplateRenderError::TemplateRenderError;
};

// A sandbox limit was reached (loop iterations, recursion, output or string
// size, total work): the template is hostile or broken.
class TemplateLimitError : public TemplateRenderError {
 public:
  using TemplateRenderError::TemplateRenderError;
};

}  // namespace ferrite::chat
