#include "chat/template.h"

#include "chat/parser.h"

namespace ferrite::chat {

Template Template::parse(const std::string& source, const LexerOptions& options) {
  Template t;
  t.source_ = source;
  t.body_ = std::make_shared<const Body>(parse_template(tokenize(source, options)));
  return t;
}

std::string Template::render(const Json& context, const RenderOptions& options) const {
  if (!context.is_object() && !context.is_null()) {
    throw InvalidArgument("chat template context must be a JSON object");
  }
  auto globals = std::make_shared<Scope>();
  install_builtins(*globals, options.now_utc_seconds);
  auto vars = std::make_shared<Scope>(globals);
  if (context.is_object()) {
    for (auto it = context.begin(); it != context.end(); ++it) vars->set(it.key(), from_json(it.value()));
  }
  Interpreter interpreter(options.limits, vars);
  return interpreter.render(*body_);
}

}  // namespace ferrite::chat
