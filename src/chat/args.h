// Argument access for builtin functions, filters, tests and methods.
#pragma once

#include <string>
#include <string_view>

#include "chat/error.h"
#include "chat/value.h"

namespace ferrite::chat {

[[noreturn]] inline void arg_error(std::string_view fn, const std::string& what) {
  throw TemplateRenderError(std::string(fn) + "(): " + what, 0, 0);
}

// The argument at `i` or keyword `name`; nullptr when absent (None counts as given).
inline const Value* opt_arg(const CallArgs& a, size_t i, std::string_view name) { return a.get(i, name); }

inline const Value& req_arg(const CallArgs& a, size_t i, std::string_view name, std::string_view fn) {
  const Value* v = a.get(i, name);
  if (!v) arg_error(fn, "missing argument '" + std::string(name) + "'");
  return *v;
}

inline std::string str_arg(const CallArgs& a, size_t i, std::string_view name, std::string_view fn) {
  const Value& v = req_arg(a, i, name, fn);
  if (!v.is_string()) arg_error(fn, "argument '" + std::string(name) + "' must be a string, not " + v.type_name());
  return v.as_string();
}

inline int64_t int_arg(const CallArgs& a, size_t i, std::string_view name, std::string_view fn, int64_t dflt) {
  const Value* v = a.get(i, name);
  if (!v || v->is_none()) return dflt;
  if (v->is_int() || v->is_bool()) return v->as_int();
  if (v->is_float()) return static_cast<int64_t>(v->as_double());
  arg_error(fn, "argument '" + std::string(name) + "' must be an integer, not " + v->type_name());
}

inline bool bool_arg(const CallArgs& a, size_t i, std::string_view name, bool dflt) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : dflt;
}

}  // namespace ferrite::chat
