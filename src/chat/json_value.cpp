#include "chat/json_value.h"

#include <algorithm>
#include <cmath>

#include "chat/error.h"
#include "chat/interpreter.h"
#include "chat/utf8.h"

namespace ferrite::chat {
namespace {

Value from_json_at(const Json& j, int depth) {
  if (depth > kMaxValueDepth) throw TemplateLimitError("JSON input nested too deeply", 0, 0);
  switch (j.type()) {
    case Json::value_t::null: return Value::none();
    case Json::value_t::boolean: return Value::boolean(j.get<bool>());
    case Json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case Json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case Json::value_t::number_float: return Value::number(j.get<double>());
    case Json::value_t::string: return Value::string(j.get<std::string>());
    case Json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json_at(x, depth + 1));
      return Value::list(std::move(items));
    }
    case Json::value_t::object: {
      Value d = Value::dict();
      for (auto it = j.begin(); it != j.end(); ++it) d.as_dict().set(it.key(), from_json_at(it.value(), depth + 1));
      return d;
    }
    default: return Value::none();  // binary / discarded: not produced by the parser
  }
}

void put_string(std::string& out, const std::string& s, bool ensure_ascii) {
  static const char* kHex = "0123456789abcdef";
  out += '"';
  auto hex4 = [&](uint32_t u) {
    out += "\\u";
    out += kHex[(u >> 12) & 15];
    out += kHex[(u >> 8) & 15];
    out += kHex[(u >> 4) & 15];
    out += kHex[u & 15];
  };
  if (ensure_ascii && !is_ascii(s)) {
    for (uint32_t cp : utf8_decode(s)) {
      if (cp < 0x80) {
        std::string one;
        put_string(one, std::string(1, static_cast<char>(cp)), false);
        out += one.substr(1, one.size() - 2);
      } else if (cp < 0x10000) {
        hex4(cp);
      } else {
        const uint32_t v = cp - 0x10000;
        hex4(0xD800 + (v >> 10));
        hex4(0xDC00 + (v & 0x3FF));
      }
    }
    out += '"';
    return;
  }
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          hex4(c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string number_text(const Value& v) {
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  if (v.is_int()) return std::to_string(v.as_int());
  const double d = v.as_double();
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return python_float_repr(d);
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {}

  void dump(std::string& out, const Value& v, int depth) {
    if (depth > kMaxValueDepth) throw TemplateLimitError("value nested too deeply for tojson", 0, 0);
    if (out.size() > o_.max_bytes) {
      throw TemplateLimitError("tojson output exceeds " + std::to_string(o_.max_bytes) + " bytes", 0, 0);
    }
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool:
      case Value::Kind::Int:
      case Value::Kind::Float: out += number_text(v); return;
      case Value::Kind::String: put_string(out, v.as_string(), o_.ensure_ascii); return;
      case Value::Kind::List: {
        const List& items = v.as_list();
        if (items.empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += o_.item_separator;
          newline(out, depth + 1);
          dump(out, items[i], depth + 1);
        }
        newline(out, depth);
        out += ']';
        return;
      }
      case Value::Kind::Dict: {
        if (v.is_namespace()) break;
        std::vector<std::pair<std::string, const Value*>> entries;
        for (const auto& [k, val] : v.as_dict().items()) entries.emplace_back(key_text(k), &val);
        if (entries.empty()) {
          out += "{}";
          return;
        }
        if (o_.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto& a, const auto& b) { return a.first < b.first; });
        }
        out += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i) out += o_.item_separator;
          newline(out, depth + 1);
          put_string(out, entries[i].first, o_.ensure_ascii);
          out += o_.key_separator;
          dump(out, *entries[i].second, depth + 1);
        }
        newline(out, depth);
        out += '}';
        return;
      }
      default: break;
    }
    throw TemplateRenderError("Object of type " + (v.is_undefined() ? std::string("Undefined") : v.type_name()) +
                                  " is not JSON serializable",
                              0, 0);
  }

 private:
  static std::string key_text(const Value& k) {
    if (k.is_string()) return k.as_string();
    if (k.is_none()) return "null";
    if (k.is_number()) return number_text(k);
    throw TemplateRenderError("keys must be str, int, float, bool or None, not " + k.type_name(), 0, 0);
  }
  void newline(std::string& out, int level) const {
    if (!o_.indent) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += *o_.indent;
  }
  const JsonDumpOptions& o_;
};

}  // namespace

Value from_json(const Json& j) { return from_json_at(j, 0); }

std::string dump_json(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Dumper(options).dump(out, v, 0);
  return out;
}

}  // namespace ferrite::chat
