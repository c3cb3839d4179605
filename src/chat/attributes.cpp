// Attribute and item access (Jinja's getattr/getitem on Python objects) and
// the methods of str, dict and list that templates call. Attributes whose
// name starts with '_' are never resolved (sandbox): they are undefined.
#include <functional>
#include <unordered_map>

#include "chat/args.h"
#include "chat/interpreter.h"
#include "chat/str_util.h"
#include "chat/utf8.h"

namespace ferrite::chat {
namespace {

using Method = std::function<Value(Interpreter&, const Value&, CallArgs&)>;

Value strings_to_list(const std::vector<std::string>& parts) {
  List out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(Value::string(p));
  return Value::list(std::move(out));
}

bool prefix_match(const Value& self, const CallArgs& args, const char* fn, bool suffix) {
  const Value& p = req_arg(args, 0, "prefix", fn);
  const std::string& s = self.as_string();
  auto one = [&](const Value& v) {
    if (!v.is_string()) arg_error(fn, "argument must be str or a tuple of str");
    const std::string& x = v.as_string();
    if (x.size() > s.size()) return false;
    return suffix ? s.compare(s.size() - x.size(), x.size(), x) == 0 : s.compare(0, x.size(), x) == 0;
  };
  if (p.is_list()) {
    for (const Value& v : p.as_list()) {
      if (one(v)) return true;
    }
    return false;
  }
  return one(p);
}

// str.format with {} / {0} / {name} fields (no format specs beyond none).
Value str_format(Interpreter& in, const std::string& fmt, CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) arg_error("format", "single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    if (field.find(':') != std::string::npos || field.find('!') != std::string::npos) {
      arg_error("format", "format specifications are not supported");
    }
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_index < args.positional.size() ? &args.positional[auto_index] : nullptr;
      ++auto_index;
    } else if (field.find_first_not_of("0123456789") == std::string::npos) {
      const size_t idx = std::stoul(field);
      v = idx < args.positional.size() ? &args.positional[idx] : nullptr;
    } else {
      for (const auto& [k, kv] : args.keyword) {
        if (k == field) v = &kv;
      }
    }
    if (!v) arg_error("format", "no argument for field '{" + field + "}'");
    out += v->str();
    in.check_string_size(out.size());
    i = close;
  }
  return Value::string(std::move(out));
}

const Method* string_method(const std::string& name) {
  static const std::unordered_map<std::string, Method> kMethods = {
      {"strip", [](Interpreter&, const Value& s, CallArgs& a) {
         const Value* c = opt_arg(a, 0, "chars");
         return Value::string(py_strip(s.as_string(), c && c->is_string() ? &c->as_string() : nullptr, true, true));
       }},
      {"lstrip", [](Interpreter&, const Value& s, CallArgs& a) {
         const Value* c = opt_arg(a, 0, "chars");
         return Value::string(py_strip(s.as_string(), c && c->is_string() ? &c->as_string() : nullptr, true, false));
       }},
      {"rstrip", [](Interpreter&, const Value& s, CallArgs& a) {
         const Value* c = opt_arg(a, 0, "chars");
         return Value::string(py_strip(s.as_string(), c && c->is_string() ? &c->as_string() : nullptr, false, true));
       }},
      {"split", [](Interpreter& in, const Value& s, CallArgs& a) {
         const Value* sep = opt_arg(a, 0, "sep");
         if (sep && sep->is_string() && sep->as_string().empty()) arg_error("split", "empty separator");
         in.charge_bytes(s.as_string().size());
         return strings_to_list(py_split(s.as_string(), sep && sep->is_string() ? &sep->as_string() : nullptr,
                                         int_arg(a, 1, "maxsplit", "split", -1), false));
       }},
      {"rsplit", [](Interpreter& in, const Value& s, CallArgs& a) {
         const Value* sep = opt_arg(a, 0, "sep");
         if (sep && sep->is_string() && sep->as_string().empty()) arg_error("rsplit", "empty separator");
         in.charge_bytes(s.as_string().size());
         return strings_to_list(py_split(s.as_string(), sep && sep->is_string() ? &sep->as_string() : nullptr,
                                         int_arg(a, 1, "maxsplit", "rsplit", -1), true));
       }},
      {"splitlines", [](Interpreter&, const Value& s, CallArgs& a) {
         return strings_to_list(py_splitlines(s.as_string(), bool_arg(a, 0, "keepends", false)));
       }},
      {"startswith", [](Interpreter&, const Value& s, CallArgs& a) {
         return Value::boolean(prefix_match(s, a, "startswith", false));
       }},
      {"endswith", [](Interpreter&, const Value& s, CallArgs& a) {
         return Value::boolean(prefix_match(s, a, "endswith", true));
       }},
      {"replace", [](Interpreter& in, const Value& s, CallArgs& a) {
         const std::string from = str_arg(a, 0, "old", "replace");
         const std::string to = str_arg(a, 1, "new", "replace");
         const size_t n = static_cast<size_t>(py_count(s.as_string(), from));
         if (to.size() > from.size()) in.check_string_size(s.as_string().size() + n * (to.size() - from.size()));
         in.charge_bytes(s.as_string().size());
         return Value::string(py_replace(s.as_string(), from, to, int_arg(a, 2, "count", "replace", -1)));
       }},
      {"upper", [](Interpreter&, const Value& s, CallArgs&) { return Value::string(py_upper(s.as_string())); }},
      {"lower", [](Interpreter&, const Value& s, CallArgs&) { return Value::string(py_lower(s.as_string())); }},
      {"title", [](Interpreter&, const Value& s, CallArgs&) { return Value::string(py_title(s.as_string())); }},
      {"capitalize",
       [](Interpreter&, const Value& s, CallArgs&) { return Value::string(py_capitalize(s.as_string())); }},
      {"find", [](Interpreter&, const Value& s, CallArgs& a) {
         const size_t p = s.as_string().find(str_arg(a, 0, "sub", "find"));
         if (p == std::string::npos) return Value::integer(-1);
         return Value::integer(static_cast<int64_t>(utf8_length(s.as_string().substr(0, p))));
       }},
      {"rfind", [](Interpreter&, const Value& s, CallArgs& a) {
         const size_t p = s.as_string().rfind(str_arg(a, 0, "sub", "rfind"));
         if (p == std::string::npos) return Value::integer(-1);
         return Value::integer(static_cast<int64_t>(utf8_length(s.as_string().substr(0, p))));
       }},
      {"count", [](Interpreter&, const Value& s, CallArgs& a) {
         return Value::integer(py_count(s.as_string(), str_arg(a, 0, "sub", "count")));
       }},
      {"join", [](Interpreter& in, const Value& s, CallArgs& a) {
         std::string out;
         bool first = true;
         for (const Value& v : iterate(req_arg(a, 0, "iterable", "join"))) {
           if (!v.is_string()) arg_error("join", "sequence item: expected str instance, " + v.type_name() + " found");
           if (!first) out += s.as_string();
           first = false;
           out += v.as_string();
           in.check_string_size(out.size());
         }
         in.charge_alloc(out.size());
         return Value::string(std::move(out));
       }},
      {"format", [](Interpreter& in, const Value& s, CallArgs& a) { return str_format(in, s.as_string(), a); }},
      {"isdigit", [](Interpreter&, const Value& s, CallArgs&) {
         const std::string& x = s.as_string();
         return Value::boolean(!x.empty() && x.find_first_not_of("0123456789") == std::string::npos);
       }},
      {"isspace", [](Interpreter&, const Value& s, CallArgs&) {
         const std::string& x = s.as_string();
         bool ok = !x.empty();
         for (char c : x) ok = ok && is_py_space(c);
         return Value::boolean(ok);
       }},
  };
  auto it = kMethods.find(name);
  return it == kMethods.end() ? nullptr : &it->second;
}

const Method* dict_method(const std::string& name) {
  static const std::unordered_map<std::string, Method> kMethods = {
      {"items", [](Interpreter&, const Value& d, CallArgs&) {
         List out;
         for (const auto& [k, v] : d.as_dict().items()) out.push_back(Value::tuple({k, v}));
         return Value::list(std::move(out));
       }},
      {"keys", [](Interpreter&, const Value& d, CallArgs&) { return Value::list(iterate(d)); }},
      {"values", [](Interpreter&, const Value& d, CallArgs&) {
         List out;
         for (const auto& [k, v] : d.as_dict().items()) out.push_back(v);
         return Value::list(std::move(out));
       }},
      {"get", [](Interpreter&, const Value& d, CallArgs& a) {
         const Value* v = d.as_dict().find(req_arg(a, 0, "key", "get"));
         if (v) return *v;
         const Value* dflt = opt_arg(a, 1, "default");
         return dflt ? *dflt : Value::none();
       }},
      {"update", [](Interpreter& in, const Value& d, CallArgs& a) {
         in.note_mutation(d);
         if (const Value* other = opt_arg(a, 0, "other"); other && other->is_dict()) {
           for (const auto& [k, v] : other->as_dict().items()) d.as_dict().set(k, v);
         }
         for (const auto& [k, v] : a.keyword) d.as_dict().set(k, v);
         return Value::none();
       }},
      {"pop", [](Interpreter&, const Value& d, CallArgs& a) {
         const Value& key = req_arg(a, 0, "key", "pop");
         const Value* v = d.as_dict().find(key);
         if (!v) {
           if (const Value* dflt = opt_arg(a, 1, "default")) return *dflt;
           arg_error("pop", "key " + key.repr() + " not found");
         }
         Value out = *v;
         d.as_dict().erase(key);
         return out;
       }},
  };
  auto it = kMethods.find(name);
  return it == kMethods.end() ? nullptr : &it->second;
}

const Method* list_method(const std::string& name) {
  static const std::unordered_map<std::string, Method> kMethods = {
      {"append", [](Interpreter& in, const Value& l, CallArgs& a) {
         in.check_list_size(l.as_list().size() + 1);
         in.charge_list_alloc(1);
         in.note_mutation(l);
         l.as_list().push_back(req_arg(a, 0, "object", "append"));
         return Value::none();
       }},
      {"extend", [](Interpreter& in, const Value& l, CallArgs& a) {
         List more = iterate(req_arg(a, 0, "iterable", "extend"));
         in.check_list_size(l.as_list().size() + more.size());
         in.charge_list_alloc(more.size());
         in.note_mutation(l);
         l.as_list().insert(l.as_list().end(), more.begin(), more.end());
         return Value::none();
       }},
      {"pop", [](Interpreter&, const Value& l, CallArgs& a) {
         List& items = l.as_list();
         if (items.empty()) arg_error("pop", "pop from empty list");
         int64_t i = int_arg(a, 0, "index", "pop", -1);
         const auto n = static_cast<int64_t>(items.size());
         if (i < 0) i += n;
         if (i < 0 || i >= n) arg_error("pop", "pop index out of range");
         Value out = items[static_cast<size_t>(i)];
         items.erase(items.begin() + i);
         return out;
       }},
      {"index", [](Interpreter&, const Value& l, CallArgs& a) {
         const Value& x = req_arg(a, 0, "value", "index");
         for (size_t i = 0; i < l.as_list().size(); ++i) {
           if (l.as_list()[i].equals(x)) return Value::integer(static_cast<int64_t>(i));
         }
         arg_error("index", x.repr() + " is not in list");
       }},
      {"count", [](Interpreter&, const Value& l, CallArgs& a) {
         const Value& x = req_arg(a, 0, "value", "count");
         int64_t n = 0;
         for (const Value& v : l.as_list()) n += v.equals(x) ? 1 : 0;
         return Value::integer(n);
       }},
  };
  auto it = kMethods.find(name);
  return it == kMethods.end() ? nullptr : &it->second;
}

Value bind(const Method* m, const Value& self, const std::string& name) {
  return Value::callable(name, [m, self](Interpreter& in, CallArgs& args) { return (*m)(in, self, args); });
}

const Method* method_of(const Value& obj, const std::string& name) {
  if (obj.is_string()) return string_method(name);
  if (obj.is_dict() && !obj.is_namespace()) return dict_method(name);
  if (obj.is_list()) return list_method(name);
  return nullptr;
}

Value missing(const Value& obj, const std::string& name) {
  return Value::undefined(obj.type_name() + " object has no attribute '" + name + "'");
}

}  // namespace

Value get_attr(Interpreter& in, const Value& obj, const std::string& name) {
  if (name.empty() || name[0] == '_') return Value::undefined("access to attribute '" + name + "' is unsafe");
  if (const Method* m = method_of(obj, name)) return bind(m, obj, name);
  if (obj.is_dict()) {
    const Value* v = obj.as_dict().find(name);
    return v ? *v : Value::undefined(name);
  }
  return missing(obj, name);
}

Value get_item(Interpreter& in, const Value& obj, const Value& key) {
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(key)) return *v;
    if (key.is_string()) return get_attr(in, obj, key.as_string());
    return Value::undefined(key.repr());
  }
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      const auto n = static_cast<int64_t>(obj.as_list().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined("list index out of range");
      return obj.as_list()[static_cast<size_t>(i)];
    }
    auto cps = utf8_decode(obj.as_string());
    const auto n = static_cast<int64_t>(cps.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined("string index out of range");
    return Value::string(utf8_encode(cps, static_cast<size_t>(i), static_cast<size_t>(i) + 1));
  }
  if (key.is_string()) return get_attr(in, obj, key.as_string());
  return Value::undefined(obj.type_name() + " object has no element " + key.repr());
}

}  // namespace ferrite::chat
