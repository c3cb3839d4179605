// A sandboxed Jinja2 template, as used for chat templates:
//
//   auto t = chat::Template::parse(source);          // TemplateSyntaxError with line/column
//   std::string text = t.render(context_json);       // TemplateRenderError / TemplateLimitError
//
// Whitespace handling defaults to what Hugging Face's apply_chat_template
// uses (trim_blocks and lstrip_blocks on). Templates see only the context
// data and the builtins (range, dict, namespace, raise_exception,
// strftime_now, cycler, joiner): no files, no host objects.
#pragma once

#include <memory>
#include <string>

#include "chat/ast.h"
#include "chat/error.h"
#include "chat/interpreter.h"
#include "chat/json_value.h"
#include "chat/lexer.h"

namespace ferrite::chat {

struct RenderOptions {
  Limits limits;
  // Clock of strftime_now as UTC seconds since the epoch; negative: now, local time.
  int64_t now_utc_seconds = -1;
};

class Template {
 public:
  static Template parse(const std::string& source, const LexerOptions& options = {});

  // `context` must be a JSON object; its keys become template variables.
  std::string render(const Json& context, const RenderOptions& options = {}) const;

  const std::string& source() const { return source_; }

 private:
  Template() = default;
  std::string source_;
  std::shared_ptr<const Body> body_;
};

}  // namespace ferrite::chat
