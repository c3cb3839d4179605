// Value construction, Python truthiness, str/repr, equality and ordering.
#include "chat/value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "chat/error.h"

namespace ferrite::chat {

namespace {
// Python's repr switches to scientific notation outside 1e-4 <= |v| < 1e16.
constexpr int kReprMinFixedExponent = -4;
constexpr int kReprMaxFixedExponent = 16;
// Deeper values (or a list holding itself) are refused by repr/==/<; the
// same bound as kMaxValueDepth in interpreter.h.
constexpr int kMaxNesting = 256;
}  // namespace

const Value* CallArgs::get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  v.i_ = b ? 1 : 0;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.i_ = i;
  return v;
}
Value Value::number(double f) {
  Value v;
  v.kind_ = Kind::Float;
  v.f_ = f;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.s_ = std::move(s);
  return v;
}
Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::List;
  v.list_ = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::tuple(List items) {
  Value v = list(std::move(items));
  v.b_ = true;
  return v;
}

Value Value::dict() {
  Value v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::make_shared<Dict>();
  return v;
}
Value Value::namespace_() {
  Value v = dict();
  v.dict_->is_namespace = true;
  return v;
}
Value Value::callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::Callable;
  v.fn_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

bool Value::is_namespace() const { return kind_ == Kind::Dict && dict_->is_namespace; }

double Value::as_double() const {
  if (kind_ == Kind::Float) return f_;
  return static_cast<double>(i_);
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b_;
    case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0.0;
    case Kind::String: return !s_.empty();
    case Kind::List: return !list_->empty();
    case Kind::Dict: return dict_->is_namespace || dict_->size() != 0;
    case Kind::Callable: return true;
  }
  return false;
}

std::string python_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci: [-]d[.ddd]e(+|-)XX
  bool negative = false;
  size_t pos = 0;
  if (sci[0] == '-') {
    negative = true;
    pos = 1;
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t i = pos; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exponent = std::atoi(sci.c_str() + e + 1);
  std::string out = negative ? "-" : "";
  if (exponent >= kReprMinFixedExponent && exponent < kReprMaxFixedExponent) {
    if (exponent < 0) {
      out.append("0.").append(static_cast<size_t>(-exponent - 1), '0').append(digits);
    } else {
      const size_t int_len = static_cast<size_t>(exponent) + 1;
      if (digits.size() <= int_len) {
        out.append(digits).append(int_len - digits.size(), '0').append(".0");
      } else {
        out.append(digits, 0, int_len).append(".").append(digits, int_len, std::string::npos);
      }
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out.append(".").append(digits, 1, std::string::npos);
  const int mag = exponent < 0 ? -exponent : exponent;
  out += exponent < 0 ? "e-" : "e+";
  if (mag < 10) out += "0";
  out += std::to_string(mag);
  return out;
}

std::string python_string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  static const char* kHex = "0123456789abcdef";
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::string Value::str(size_t max_bytes) const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::String: return s_;
    default: return repr(max_bytes);
  }
}

std::string Value::repr(size_t max_bytes) const {
  std::string out;
  repr_at(out, 0, std::min(max_bytes, kMaxReprBytes));
  return out;
}

void Value::repr_at(std::string& out, int depth, size_t max_bytes) const {
  if (depth > kMaxNesting) throw TemplateLimitError("value nested too deeply (or containing itself)", 0, 0);
  if (out.size() > max_bytes) {
    throw TemplateLimitError("printing a value takes more than " + std::to_string(max_bytes) + " bytes", 0, 0);
  }
  switch (kind_) {
    case Kind::Undefined: return;
    case Kind::None: out += "None"; return;
    case Kind::Bool: out += b_ ? "True" : "False"; return;
    case Kind::Int: out += std::to_string(i_); return;
    case Kind::Float: out += python_float_repr(f_); return;
    case Kind::String: out += python_string_repr(s_); return;
    case Kind::List: {
      out += b_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) out += ", ";
        (*list_)[i].repr_at(out, depth + 1, max_bytes);
      }
      if (b_ && list_->size() == 1) out += ",";
      out += b_ ? ")" : "]";
      return;
    }
    case Kind::Dict: {
      if (dict_->is_namespace) {
        out += "<Namespace>";
        return;
      }
      out += "{";
      bool first = true;
      for (const auto& [k, v] : dict_->items()) {
        if (!first) out += ", ";
        first = false;
        k.repr_at(out, depth + 1, max_bytes);
        out += ": ";
        v.repr_at(out, depth + 1, max_bytes);
      }
      out += "}";
      return;
    }
    case Kind::Callable: out += "<function " + fn_->name + ">"; return;
  }
}

bool Value::equals(const Value& o) const { return equals_at(o, 0); }

bool Value::equals_at(const Value& o, int depth) const {
  if (depth > kMaxNesting) throw TemplateLimitError("value nested too deeply (or containing itself)", 0, 0);
  if (is_number() && o.is_number()) {
    if (kind_ == Kind::Float || o.kind_ == Kind::Float) return as_double() == o.as_double();
    return i_ == o.i_;
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String: return s_ == o.s_;
    case Kind::List: {
      if (b_ != o.b_) return false;  // Python: (1, 2) != [1, 2]
      if (list_ == o.list_) return true;
      if (list_->size() != o.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].equals_at((*o.list_)[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::Dict: {
      if (dict_ == o.dict_) return true;
      if (dict_->is_namespace || o.dict_->is_namespace) return false;
      if (dict_->size() != o.dict_->size()) return false;
      for (const auto& [k, v] : dict_->items()) {
        const Value* other = o.dict_->find(k);
        if (!other || !v.equals_at(*other, depth + 1)) return false;
      }
      return true;
    }
    case Kind::Callable: return fn_ == o.fn_;
    default: return false;
  }
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return dict_->is_namespace ? "Namespace" : "dict";
    case Kind::Callable: return "function";
  }
  return "?";
}

namespace {
bool less_than_at(const Value& a, const Value& b, int depth);
}

bool less_than(const Value& a, const Value& b) { return less_than_at(a, b, 0); }

namespace {
bool less_than_at(const Value& a, const Value& b, int depth) {
  if (depth > kMaxNesting) throw TemplateLimitError("value nested too deeply (or containing itself)", 0, 0);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].equals(y[i])) continue;
      return less_than_at(x[i], y[i], depth + 1);
    }
    return x.size() < y.size();
  }
  if (a.is_undefined() || b.is_undefined()) {
    throw TemplateRenderError("'" + (a.is_undefined() ? a.hint() : b.hint()) + "' is undefined", 0, 0);
  }
  throw TemplateRenderError("'<' not supported between instances of '" + a.type_name() + "' and '" +
                                b.type_name() + "'",
                            0, 0);
}
}  // namespace

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : items_) {
    if (k.equals(key)) return &v;
  }
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items_) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

void Dict::set(const Value& key, Value v) {
  for (auto& [k, old] : items_) {
    if (k.equals(key)) {
      old = std::move(v);
      return;
    }
  }
  items_.emplace_back(key, std::move(v));
}

bool Dict::erase(const Value& key) {
  for (auto it = items_.begin(); it != items_.end(); ++it) {
    if (it->first.equals(key)) {
      items_.erase(it);
      return true;
    }
  }
  return false;
}

}  // namespace ferrite::chat
