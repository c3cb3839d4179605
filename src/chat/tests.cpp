// Jinja tests (`x is defined`, `n is divisibleby 3`, ...).
#include <cmath>
#include <functional>
#include <unordered_map>

#include "chat/args.h"
#include "chat/interpreter.h"

namespace ferrite::chat {
namespace {

using TestFn = std::function<bool(Interpreter&, const Value&, CallArgs&)>;

bool has_case(const std::string& s, bool want_lower) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') {
      if (!want_lower) return false;
      cased = true;
    } else if (c >= 'A' && c <= 'Z') {
      if (want_lower) return false;
      cased = true;
    }
  }
  return cased;
}

int64_t require_int(const Value& v, const char* test) {
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.is_float()) return static_cast<int64_t>(v.as_double());
  throw TemplateRenderError(std::string("test '") + test + "' needs a number, not " + v.type_name(), 0, 0);
}

TestFn compare_test(const char* op) {
  return [op](Interpreter&, const Value& v, CallArgs& a) {
    const Value& other = req_arg(a, 0, "other", op);
    const std::string o = op;
    if (o == "eq") return v.equals(other);
    if (o == "ne") return !v.equals(other);
    if (o == "lt") return less_than(v, other);
    if (o == "le") return !less_than(other, v);
    if (o == "gt") return less_than(other, v);
    return !less_than(v, other);  // ge
  };
}

const std::unordered_map<std::string, TestFn>& tests() {
  static const std::unordered_map<std::string, TestFn> kTests = {
      {"defined", [](Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }},
      {"none", [](Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }},
      {"string", [](Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }},
      {"number", [](Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }},
      {"integer", [](Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }},
      {"float", [](Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }},
      {"boolean", [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }},
      {"true", [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"mapping", [](Interpreter&, const Value& v, CallArgs&) { return v.is_dict() && !v.is_namespace(); }},
      {"iterable", [](Interpreter&, const Value& v, CallArgs&) {
         return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined();
       }},
      {"sequence", [](Interpreter&, const Value& v, CallArgs&) { return v.is_list() || v.is_dict() || v.is_string(); }},
      {"callable", [](Interpreter&, const Value& v, CallArgs&) { return v.is_callable(); }},
      {"even", [](Interpreter&, const Value& v, CallArgs&) { return require_int(v, "even") % 2 == 0; }},
      {"odd", [](Interpreter&, const Value& v, CallArgs&) { return require_int(v, "odd") % 2 != 0; }},
      {"divisibleby", [](Interpreter&, const Value& v, CallArgs& a) {
         const int64_t d = require_int(req_arg(a, 0, "num", "divisibleby"), "divisibleby");
         if (d == 0) throw TemplateRenderError("integer division or modulo by zero", 0, 0);
         return require_int(v, "divisibleby") % d == 0;
       }},
      {"eq", compare_test("eq")},
      {"ne", compare_test("ne")},
      {"lt", compare_test("lt")},
      {"le", compare_test("le")},
      {"gt", compare_test("gt")},
      {"ge", compare_test("ge")},
      {"in", [](Interpreter&, const Value& v, CallArgs& a) { return contains(req_arg(a, 0, "seq", "in"), v); }},
      {"sameas", [](Interpreter&, const Value& v, CallArgs& a) {
         const Value& o = req_arg(a, 0, "other", "sameas");
         if (v.kind() != o.kind()) return false;
         if (v.is_list() || v.is_dict() || v.is_callable()) return v.equals(o) && (v.is_list() ? &v.as_list() == &o.as_list()
                                                                                  : v.is_dict() ? &v.as_dict() == &o.as_dict()
                                                                                                : true);
         return v.equals(o);
       }},
      {"lower", [](Interpreter&, const Value& v, CallArgs&) { return v.is_string() && has_case(v.as_string(), true); }},
      {"upper", [](Interpreter&, const Value& v, CallArgs&) { return v.is_string() && has_case(v.as_string(), false); }},
      {"escaped", [](Interpreter&, const Value&, CallArgs&) { return false; }},
  };
  return kTests;
}

std::string canonical(const std::string& name) {
  if (name == "equalto" || name == "==") return "eq";
  if (name == "!=") return "ne";
  if (name == "lessthan" || name == "<") return "lt";
  if (name == "<=") return "le";
  if (name == "greaterthan" || name == ">") return "gt";
  if (name == ">=") return "ge";
  return name;
}

}  // namespace

bool has_test(const std::string& name) { return tests().count(canonical(name)) != 0; }

bool apply_test(Interpreter& in, const std::string& name, const Value& input, CallArgs& args) {
  auto it = tests().find(canonical(name));
  if (it == tests().end()) throw TemplateRenderError("no test named '" + name + "'", 0, 0);
  return it->second(in, input, args);
}

}  // namespace ferrite::chat
