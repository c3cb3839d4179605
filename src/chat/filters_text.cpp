// Filters on text and numbers: trim, upper, lower, title, capitalize,
// replace, indent, center, wordcount, string, int, float, round, abs, safe,
// escape, format, tojson, default.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cfenv>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "chat/args.h"
#include "chat/filters.h"
#include "chat/json_value.h"
#include "chat/str_util.h"
#include "chat/utf8.h"

namespace ferrite::chat {
namespace {

// Indentation wider than this is clamped (tojson, indent).
constexpr int64_t kMaxIndent = 256;

// Jinja's title filter capitalizes after '-', whitespace and opening brackets.
std::string jinja_title(const std::string& s) {
  std::string out;
  bool word_start = true;
  for (char c : s) {
    const bool boundary = c == '-' || is_py_space(c) || c == '(' || c == '{' || c == '[' || c == '<';
    if (boundary) {
      out += c;
      word_start = true;
    } else if (word_start) {
      out += py_upper(std::string(1, c));
      word_start = false;
    } else {
      out += py_lower(std::string(1, c));
    }
  }
  return out;
}

std::string indent_text(const std::string& text, const std::string& pad, bool first, bool blank) {
  std::vector<std::string> lines = py_splitlines(text + "\n", false);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv.append("\n").append(pad);
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += '\n';
      if (!lines[i].empty()) rv.append(pad).append(lines[i]);
    }
  }
  return first ? pad + rv : rv;
}

bool is_word_byte(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

// int('  42 ') and int('0x1f', 16) as Python parses them; nullopt when invalid.
std::optional<int64_t> parse_int(const std::string& text, int base) {
  std::string s = py_strip(text, nullptr, true, true);
  std::string digits;
  for (char c : s) {
    if (c != '_') digits += c;
  }
  if (digits.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(digits.c_str(), &end, base);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<double> parse_float(const std::string& text) {
  std::string s = py_strip(text, nullptr, true, true);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return v;
}

Value round_value(const Value& v, int64_t precision, const std::string& method) {
  if (!v.is_number()) throw TemplateRenderError("round filter needs a number, not " + v.type_name(), 0, 0);
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double();
  if (method == "common") {
    const int saved = std::fegetround();
    std::fesetround(FE_TONEAREST);
    const double r = std::nearbyint(x * scale) / scale;
    std::fesetround(saved);
    if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
    return Value::number(r);
  }
  if (method == "ceil") return Value::number(std::ceil(x * scale) / scale);
  if (method == "floor") return Value::number(std::floor(x * scale) / scale);
  throw TemplateRenderError("method must be common, ceil or floor", 0, 0);
}

Value tojson(Interpreter& in, const Value& v, CallArgs& a) {
  JsonDumpOptions o;
  if (const Value* indent = opt_arg(a, 0, "indent"); indent && !indent->is_none()) {
    if (indent->is_string()) {
      o.indent = indent->as_string();
    } else {
      const int64_t n = int_arg(a, 0, "indent", "tojson", 0);
      const size_t width = n > 0 ? static_cast<size_t>(std::min<int64_t>(n, kMaxIndent)) : 0;
      o.indent.emplace(width, ' ');
    }
    o.item_separator.assign(1, ',');
  }
  o.sort_keys = bool_arg(a, 99, "sort_keys", false);
  o.ensure_ascii = bool_arg(a, 99, "ensure_ascii", false);
  if (const Value* sep = opt_arg(a, 99, "separators"); sep && sep->is_list() && sep->as_list().size() == 2) {
    o.item_separator = sep->as_list()[0].str();
    o.key_separator = sep->as_list()[1].str();
  }
  o.max_bytes = in.limits().max_string_bytes;
  std::string out = dump_json(v, o);
  in.check_string_size(out.size());
  in.charge_bytes(out.size());
  in.charge_alloc(out.size());
  return Value::string(std::move(out));
}

}  // namespace

const FilterTable& text_filters() {
  static const FilterTable kTable = {
      {"trim", [](Interpreter&, const Value& v, CallArgs& a) {
         const Value* c = opt_arg(a, 0, "chars");
         return Value::string(py_strip(v.str(), c && c->is_string() ? &c->as_string() : nullptr, true, true));
       }},
      {"upper", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(py_upper(v.str())); }},
      {"lower", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(py_lower(v.str())); }},
      {"title", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(jinja_title(v.str())); }},
      {"capitalize", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(py_capitalize(v.str())); }},
      {"replace", [](Interpreter& in, const Value& v, CallArgs& a) {
         const std::string s = v.str();
         const std::string from = req_arg(a, 0, "old", "replace").str();
         const std::string to = req_arg(a, 1, "new", "replace").str();
         const size_t n = static_cast<size_t>(py_count(s, from));
         if (to.size() > from.size()) in.check_string_size(s.size() + n * (to.size() - from.size()));
         in.charge_bytes(s.size());
         in.charge_alloc(s.size());
         return Value::string(py_replace(s, from, to, int_arg(a, 2, "count", "replace", -1)));
       }},
      {"indent", [](Interpreter& in, const Value& v, CallArgs& a) {
         std::string pad;
         const Value* w = opt_arg(a, 0, "width");
         if (w && w->is_string()) {
           pad = w->as_string();
         } else {
           pad = std::string(static_cast<size_t>(std::clamp<int64_t>(int_arg(a, 0, "width", "indent", 4), 0, kMaxIndent)), ' ');
         }
         const std::string s = v.str();
         in.check_string_size(s.size() + (py_count(s, "\n") + 1) * pad.size());
         return Value::string(indent_text(s, pad, bool_arg(a, 1, "first", false), bool_arg(a, 2, "blank", false)));
       }},
      {"center", [](Interpreter& in, const Value& v, CallArgs& a) {
         const std::string s = v.str();
         const int64_t width = int_arg(a, 0, "width", "center", 80);
         const auto len = static_cast<int64_t>(utf8_length(s));
         if (width <= len) return Value::string(s);
         in.check_string_size(static_cast<size_t>(width));
         const int64_t pad = width - len;
         const int64_t left = pad / 2 + (pad & width & 1);
         return Value::string(std::string(static_cast<size_t>(left), ' ') + s +
                              std::string(static_cast<size_t>(pad - left), ' '));
       }},
      {"wordcount", [](Interpreter&, const Value& v, CallArgs&) {
         int64_t n = 0;
         bool in_word = false;
         for (unsigned char c : v.str()) {
           const bool w = is_word_byte(c);
           if (w && !in_word) ++n;
           in_word = w;
         }
         return Value::integer(n);
       }},
      {"string", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(v.str()); }},
      {"safe", [](Interpreter&, const Value& v, CallArgs&) { return Value::string(v.str()); }},
      {"escape", [](Interpreter&, const Value& v, CallArgs&) {
         std::string out;
         for (char c : v.str()) {
           switch (c) {
             case '&': out += "&amp;"; break;
             case '<': out += "&lt;"; break;
             case '>': out += "&gt;"; break;
             case '"': out += "&#34;"; break;
             case '\'': out += "&#39;"; break;
             default: out += c;
           }
         }
         return Value::string(std::move(out));
       }},
      {"int", [](Interpreter&, const Value& v, CallArgs& a) {
         const Value* d = opt_arg(a, 0, "default");
         const Value dflt = d ? *d : Value::integer(0);
         if (v.is_int() || v.is_bool()) return Value::integer(v.as_int());
         if (v.is_float()) {
           const double x = v.as_double();
           if (!std::isfinite(x) || std::fabs(x) >= 9.2e18) return dflt;
           return Value::integer(static_cast<int64_t>(x));
         }
         if (v.is_string()) {
           if (auto i = parse_int(v.as_string(), static_cast<int>(int_arg(a, 1, "base", "int", 10)))) {
             return Value::integer(*i);
           }
           if (auto f = parse_float(v.as_string()); f && std::isfinite(*f) && std::fabs(*f) < 9.2e18) {
             return Value::integer(static_cast<int64_t>(*f));
           }
         }
         return dflt;
       }},
      {"float", [](Interpreter&, const Value& v, CallArgs& a) {
         const Value* d = opt_arg(a, 0, "default");
         const Value dflt = d ? *d : Value::number(0.0);
         if (v.is_number()) return Value::number(v.as_double());
         if (v.is_string()) {
           if (auto f = parse_float(v.as_string())) return Value::number(*f);
         }
         return dflt;
       }},
      {"round", [](Interpreter&, const Value& v, CallArgs& a) {
         const Value* m = opt_arg(a, 1, "method");
         return round_value(v, int_arg(a, 0, "precision", "round", 0), m ? m->str() : "common");
       }},
      {"abs", [](Interpreter&, const Value& v, CallArgs&) {
         if (v.is_int() || v.is_bool()) {
           if (v.as_int() == INT64_MIN) throw TemplateRenderError("integer overflow", 0, 0);
           return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
         }
         if (v.is_float()) return Value::number(std::fabs(v.as_double()));
         throw TemplateRenderError("bad operand type for abs(): '" + v.type_name() + "'", 0, 0);
       }},
      {"format", [](Interpreter& in, const Value& v, CallArgs& a) {
         return arithmetic(in, "%", Value::string(v.str()), Value::list(a.positional));
       }},
      {"tojson", tojson},
      {"default", [](Interpreter&, const Value& v, CallArgs& a) {
         const Value* d = opt_arg(a, 0, "default_value");
         const bool boolean = bool_arg(a, 1, "boolean", false);
         if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value::string("");
         return v;
       }},
  };
  return kTable;
}

}  // namespace ferrite::chat
