// Python's arithmetic, membership, iteration and slicing on template values.
#include <cmath>

#include "chat/error.h"
#include "chat/interpreter.h"
#include "chat/utf8.h"

namespace ferrite::chat {
namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  throw TemplateRenderError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                                b.type_name() + "'",
                            0, 0);
}

[[noreturn]] void overflow() { throw TemplateRenderError("integer overflow", 0, 0); }

bool is_integral(const Value& v) { return v.is_int() || v.is_bool(); }

Value repeat(Interpreter& in, const Value& seq, int64_t times) {
  if (times <= 0) return seq.is_string() ? Value::string("") : Value::list();
  // Bytes, not items: a list item is a whole Value.
  const size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size() * sizeof(Value);
  const auto n = static_cast<uint64_t>(times);
  if (unit != 0 && n > in.limits().max_string_bytes / unit) in.check_string_size(in.limits().max_string_bytes + 1);
  in.charge_bytes(unit * n);
  in.charge_alloc(unit * n);
  if (seq.is_string()) {
    std::string out;
    out.reserve(unit * n);
    for (uint64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value::string(std::move(out));
  }
  List out;
  for (uint64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return Value::list(std::move(out));
}

// printf-style `'%s and %d' % (a, b)` for the conversions templates use.
Value percent_format(Interpreter& in, const std::string& fmt, const Value& arg) {
  List args = arg.is_list() ? arg.as_list() : List{arg};
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (i + 1 >= fmt.size()) throw TemplateRenderError("incomplete format", 0, 0);
    const char c = fmt[++i];
    if (c == '%') {
      out += '%';
      continue;
    }
    if (next >= args.size()) throw TemplateRenderError("not enough arguments for format string", 0, 0);
    const Value& v = args[next++];
    if (c == 's') {
      out += v.str();
    } else if (c == 'r') {
      out += v.repr();
    } else if (c == 'd' || c == 'i') {
      if (!v.is_number()) throw TemplateRenderError("%d format: a number is required", 0, 0);
      out += std::to_string(v.is_float() ? static_cast<int64_t>(v.as_double()) : v.as_int());
    } else {
      throw TemplateRenderError(std::string("unsupported format character '") + c + "'", 0, 0);
    }
    in.check_string_size(out.size());
  }
  if (next < args.size()) throw TemplateRenderError("not all arguments converted during string formatting", 0, 0);
  return Value::string(std::move(out));
}

}  // namespace

Value arithmetic(Interpreter& in, const std::string& op, const Value& a, const Value& b) {
  const bool nums = a.is_number() && b.is_number();
  const bool ints = is_integral(a) && is_integral(b);
  if (op == "+") {
    if (ints) {
      int64_t r;
      if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) overflow();
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      in.check_string_size(a.as_string().size() + b.as_string().size());
      in.charge_bytes(a.as_string().size() + b.as_string().size());
      in.charge_alloc(a.as_string().size() + b.as_string().size());
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list()) {
      in.check_list_size(a.as_list().size() + b.as_list().size());
      in.charge_list_alloc(a.as_list().size() + b.as_list().size());
      in.charge_bytes((a.as_list().size() + b.as_list().size()) * sizeof(Value));
      List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value::list(std::move(out));
    }
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r;
      if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) overflow();
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() - b.as_double());
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) overflow();
      return Value::integer(r);
    }
    if (nums) return Value::number(a.as_double() * b.as_double());
    if ((a.is_string() || a.is_list()) && is_integral(b)) return repeat(in, a, b.as_int());
    if ((b.is_string() || b.is_list()) && is_integral(a)) return repeat(in, b, a.as_int());
    unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0.0) throw TemplateRenderError("division by zero", 0, 0);
    return Value::number(a.as_double() / b.as_double());
  }
  if (op == "//" || op == "%") {
    if (op == "%" && a.is_string()) return percent_format(in, a.as_string(), b);
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0.0) throw TemplateRenderError("integer division or modulo by zero", 0, 0);
    if (ints) {
      const int64_t x = a.as_int();
      const int64_t y = b.as_int();
      if (x == INT64_MIN && y == -1) overflow();
      int64_t q = x / y;
      int64_t r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        q -= 1;
        r += y;
      }
      return Value::integer(op == "//" ? q : r);
    }
    const double x = a.as_double();
    const double y = b.as_double();
    if (op == "//") return Value::number(std::floor(x / y));
    double r = std::fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value::number(r);
  }
  if (op == "**") {
    if (!nums) unsupported(op, a, b);
    if (ints && b.as_int() >= 0) {
      int64_t result = 1;
      int64_t base = a.as_int();
      int64_t e = b.as_int();
      while (e > 0) {
        if (e & 1) {
          if (__builtin_mul_overflow(result, base, &result)) overflow();
        }
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) overflow();
      }
      return Value::integer(result);
    }
    return Value::number(std::pow(a.as_double(), b.as_double()));
  }
  throw TemplateRenderError("unknown operator '" + op + "'", 0, 0);
}

List iterate(const Value& v) {
  if (v.is_list()) return v.as_list();
  if (v.is_dict()) {
    List keys;
    for (const auto& [k, val] : v.as_dict().items()) keys.push_back(k);
    return keys;
  }
  if (v.is_string()) {
    List chars;
    const std::string& s = v.as_string();
    if (is_ascii(s)) {
      for (char c : s) chars.push_back(Value::string(std::string(1, c)));
    } else {
      auto cps = utf8_decode(s);
      for (size_t i = 0; i < cps.size(); ++i) chars.push_back(Value::string(utf8_encode(cps, i, i + 1)));
    }
    return chars;
  }
  if (v.is_undefined()) return {};
  throw TemplateRenderError("'" + v.type_name() + "' object is not iterable", 0, 0);
}

bool contains(const Value& haystack, const Value& needle) {
  if (haystack.is_string()) {
    if (!needle.is_string()) {
      throw TemplateRenderError("'in <string>' requires string as left operand, not " + needle.type_name(), 0, 0);
    }
    return haystack.as_string().find(needle.as_string()) != std::string::npos;
  }
  if (haystack.is_dict()) return haystack.as_dict().find(needle) != nullptr;
  if (haystack.is_list()) {
    for (const Value& v : haystack.as_list()) {
      if (v.equals(needle)) return true;
    }
    return false;
  }
  if (haystack.is_undefined()) return false;
  throw TemplateRenderError("argument of type '" + haystack.type_name() + "' is not iterable", 0, 0);
}

Value Interpreter::eval_slice(const Expr& e, const std::shared_ptr<Scope>& scope) {
  Value target = eval(*e.children[0], scope);
  if (target.is_undefined()) throw TemplateRenderError("'" + target.hint() + "' is undefined", 0, 0);
  auto bound = [&](size_t i) -> std::optional<int64_t> {
    if (!e.children[i]) return std::nullopt;
    Value v = eval(*e.children[i], scope);
    if (v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) throw TemplateRenderError("slice indices must be integers or None", 0, 0);
    return v.as_int();
  };
  const std::optional<int64_t> start = bound(1);
  const std::optional<int64_t> stop = bound(2);
  const int64_t step = bound(3).value_or(1);
  if (step == 0) throw TemplateRenderError("slice step cannot be zero", 0, 0);

  std::vector<uint32_t> cps;
  int64_t len = 0;
  if (target.is_string()) {
    cps = utf8_decode(target.as_string());
    len = static_cast<int64_t>(cps.size());
  } else if (target.is_list()) {
    len = static_cast<int64_t>(target.as_list().size());
  } else {
    throw TemplateRenderError("'" + target.type_name() + "' object is not subscriptable", 0, 0);
  }
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt, int64_t lo, int64_t hi) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + len : *v;
    return x < lo ? lo : x > hi ? hi : x;
  };
  int64_t b, f;
  if (step > 0) {
    b = clamp(start, 0, 0, len);
    f = clamp(stop, len, 0, len);
  } else {
    b = clamp(start, len - 1, -1, len - 1);
    f = clamp(stop, -1, -1, len - 1);
  }
  std::vector<int64_t> idx;
  for (int64_t i = b; step > 0 ? i < f : i > f; i += step) {
    charge(1);
    idx.push_back(i);
  }
  if (target.is_string()) {
    std::string out;
    for (int64_t i : idx) utf8_append(out, cps[static_cast<size_t>(i)]);
    return Value::string(std::move(out));
  }
  List out;
  for (int64_t i : idx) out.push_back(target.as_list()[static_cast<size_t>(i)]);
  return Value::list(std::move(out));
}

}  // namespace ferrite::chat
