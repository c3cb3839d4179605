#include "grammar/json_schema.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "core/error.h"

namespace ferrite::grammar {

namespace {

using json = nlohmann::ordered_json;

// Shared building blocks, added to a grammar when first used.
const std::map<std::string, std::string>& primitive_rules() {
  static const std::map<std::string, std::string> rules = {
      {"ws", R"(| " " | "\n" [ \t]{0,20})"},
      {"boolean", R"(("true" | "false") ws)"},
      {"null", R"("null" ws)"},
      {"int-digits", R"("0" | [1-9] [0-9]{0,15})"},
      {"integer", R"("-"? int-digits ws)"},
      {"number", R"("-"? int-digits ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws)"},
      {"char", R"([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))"},
      {"string", R"("\"" char* "\"" ws)"},
      {"value", R"(object | array | string | number | boolean | null)"},
      {"object", R"("{" ws (string ":" ws value ("," ws string ":" ws value)*)? "}" ws)"},
      {"array", R"("[" ws (value ("," ws value)*)? "]" ws)"},
      {"date", R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [1-2] [0-9] | "3" [0-1]))"},
      {"time",
       R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{3})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))"},
      {"date-time", R"(date "T" time)"},
      {"uuid",
       R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})"},
      {"date-string", R"("\"" date "\"" ws)"},
      {"time-string", R"("\"" time "\"" ws)"},
      {"date-time-string", R"("\"" date-time "\"" ws)"},
      {"uuid-string", R"("\"" uuid "\"" ws)"},
  };
  return rules;
}

// Rules each primitive refers to.
const std::map<std::string, std::vector<std::string>>& primitive_deps() {
  static const std::map<std::string, std::vector<std::string>> deps = {
      {"boolean", {"ws"}}, {"null", {"ws"}}, {"integer", {"int-digits", "ws"}},
      {"number", {"int-digits", "ws"}}, {"string", {"char", "ws"}},
      {"value", {"object", "array", "string", "number", "boolean", "null"}},
      {"object", {"ws", "string", "value"}}, {"array", {"ws", "value"}},
      {"date-time", {"date", "time"}}, {"date-string", {"date", "ws"}},
      {"time-string", {"time", "ws"}}, {"date-time-string", {"date-time", "ws"}},
      {"uuid-string", {"uuid", "ws"}},
  };
  return deps;
}

// A GBNF string literal for raw UTF-8 text.
std::string gbnf_literal(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out += ok ? c : '-';
  }
  if (out.empty()) out = "x";
  return out;
}

// The work of one conversion, counted as it goes.
class Budget {
 public:
  explicit Budget(const SchemaLimits& limits)
      : limits_(limits),
        deadline_(std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(limits.max_seconds > 0 ? limits.max_seconds : 0.0))) {}

  void step(size_t n = 1) {
    steps_ += n;
    if (steps_ > limits_.max_steps) {
      throw SchemaLimitError("json schema needs more than " + std::to_string(limits_.max_steps) +
                             " conversion steps (nested type lists, allOf or $ref chains multiply the work)");
    }
    if ((steps_ & kClockEvery) == 0 || n > 1) check_clock();
  }
  // Text about to be kept: the rules so far plus `pending` more bytes.
  void check_bytes(size_t pending) const {
    if (kept_ + pending > limits_.max_grammar_bytes) {
      throw SchemaLimitError("json schema needs a grammar of more than " + std::to_string(limits_.max_grammar_bytes) +
                             " bytes");
    }
  }
  void keep(size_t bytes) {
    check_bytes(bytes);
    kept_ += bytes;
  }
  // Charges the nodes of `v` before it is copied.
  void charge_copy(const json& v) {
    step();
    if (v.is_structured()) {
      for (const json& x : v) charge_copy(x);
    }
  }

 private:
  static constexpr size_t kClockEvery = 255;
  void check_clock() const {
    if (limits_.cancel && limits_.cancel->load(std::memory_order_relaxed)) {
      throw Cancelled("json schema conversion cancelled");
    }
    if (limits_.max_seconds > 0 && std::chrono::steady_clock::now() > deadline_) {
      throw SchemaLimitError("json schema conversion took longer than " + std::to_string(limits_.max_seconds) + " s");
    }
  }

  SchemaLimits limits_;
  std::chrono::steady_clock::time_point deadline_;
  size_t steps_ = 0;
  size_t kept_ = 0;
};

class Converter {
 public:
  Converter(const json& root, const SchemaLimits& limits) : root_(root), budget_(limits) {}

  std::string run() {
    const std::string body = visit(root_, "root", "#");
    add_named("root", body);
    std::string out;
    for (const auto& [name, rule] : order_) out += name + std::string(" ::= ") + rule + "\n";
    return out;
  }

 private:
  static constexpr size_t kMaxDepth = 64;
  const json& root_;
  Budget budget_;
  std::vector<std::pair<std::string, std::string>> order_;
  std::set<std::string> names_;
  std::map<std::string, std::string> ref_rules_;  // JSON pointer -> rule name
  std::map<std::string, int> next_suffix_;        // rule name base -> last number used
  size_t depth_ = 0;

  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    throw InvalidArgument(std::string("json schema at ") + path + std::string(": ") + what);
  }

  std::string use(const std::string& primitive) {
    if (names_.count(primitive)) return primitive;
    names_.insert(primitive);
    auto deps = primitive_deps().find(primitive);
    if (deps != primitive_deps().end()) {
      for (const auto& d : deps->second) use(d);
    }
    const std::string& rule = primitive_rules().at(primitive);
    budget_.keep(primitive.size() + rule.size());
    order_.push_back({primitive, rule});
    return primitive;
  }

  std::string fresh_name(const std::string& hint) {
    std::string base = sanitize(hint);
    if (primitive_rules().count(base)) base += "-";
    std::string name = base;
    // Numbered from where this base left off: probing from 1 each time was
    // quadratic in the number of rules sharing a hint.
    for (int& i = next_suffix_[base]; names_.count(name);) name = base + std::to_string(++i);
    names_.insert(name);
    return name;
  }

  std::string add_named(const std::string& hint, const std::string& body) {
    const std::string name = hint == "root" && !names_.count("root") ? hint : fresh_name(hint);
    names_.insert(name);
    budget_.keep(name.size() + body.size());
    order_.push_back({name, body});
    return name;
  }

  // A JSON constant as a grammar: its tokens in order, with the usual
  // whitespace between them (so {"k": [1]} and {"k":[1]} both match).
  std::string literal_value(const json& v) {
    budget_.step();
    const std::string ws = use("ws");
    if (v.is_object()) {
      std::string out = "\"{\" " + ws;
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += " \",\" " + ws;
        first = false;
        out += " " + gbnf_literal(json(it.key()).dump()) + " " + ws + " \":\" " + ws + " " + literal_value(*it);
        budget_.check_bytes(out.size());
      }
      return out + " \"}\" " + ws;
    }
    if (v.is_array()) {
      std::string out = "\"[\" " + ws;
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += " \",\" " + ws;
        out += " " + literal_value(v[i]);
        budget_.check_bytes(out.size());
      }
      return out + " \"]\" " + ws;
    }
    return gbnf_literal(v.dump()) + " " + ws;
  }

  const json& resolve(const std::string& ref, const std::string& path) {
    budget_.step();
    if (ref.rfind("#", 0) != 0) fail(path, std::string("only local $ref (\"#/...\") is supported: ") + ref);
    try {
      return root_.at(json::json_pointer(ref.substr(1)));
    } catch (const json::exception&) {
      fail(path, std::string("$ref ") + ref + " does not resolve");
    }
  }

  // GBNF expression for `schema`; `hint` names the rules it creates.
  // `type`: one entry of the schema's list of types, visited in its place.
  std::string visit(const json& schema, const std::string& hint, const std::string& path, const json* type = nullptr) {
    budget_.step();
    if (++depth_ > kMaxDepth) fail(path, "schema nested too deeply");
    struct Leave {
      size_t& d;
      ~Leave() { --d; }
    } leave{depth_};
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail(path, "the schema false admits nothing");
      return use("value");
    }
    if (!schema.is_object()) fail(path, "a schema must be an object or a boolean");
    if (schema.contains("$ref")) {
      const std::string ref = schema["$ref"].is_string() ? schema["$ref"].get<std::string>() : "";
      auto it = ref_rules_.find(ref);
      if (it != ref_rules_.end()) return it->second;
      const json& target = resolve(ref, path);
      const std::string name = fresh_name(ref.substr(ref.find_last_of('/') + 1));
      ref_rules_[ref] = name;  // before visiting: recursive schemas refer to it
      const std::string body = visit(target, name, ref);
      budget_.keep(name.size() + body.size());
      order_.push_back({name, body});
      return name;
    }
    if (schema.contains("const")) return literal_value(schema["const"]);
    if (schema.contains("enum")) {
      if (!schema["enum"].is_array() || schema["enum"].empty()) fail(path, "enum must be a non-empty array");
      std::string out = "(";
      for (size_t i = 0; i < schema["enum"].size(); ++i) {
        out += (i ? " | " : "") + literal_value(schema["enum"][i]);
        budget_.check_bytes(out.size());
      }
      return out + ")";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!schema.contains(key)) continue;
      const json& list = schema[key];
      if (!list.is_array() || list.empty()) fail(path, std::string(key) + " must be a non-empty array");
      std::string out = "(";
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string p = path + std::string("/") + key + std::string("/") + std::to_string(i);
        out += (i ? " | " : "") + visit(list[i], hint + std::string("-") + std::to_string(i), p);
        budget_.check_bytes(out.size());
      }
      return out + ")";
    }
    if (schema.contains("allOf")) return visit(merge_all_of(schema, path), hint, path);
    if (!type && schema.contains("type") && schema["type"].is_array()) {
      std::string out = "(";
      for (size_t i = 0; i < schema["type"].size(); ++i) {
        out += (i ? " | " : "") + visit(schema, hint, path, &schema["type"][i]);
        budget_.check_bytes(out.size());
      }
      return out + ")";
    }
    const json* type_value = type ? type : (schema.contains("type") ? &schema["type"] : nullptr);
    const std::string type_name = type_value && type_value->is_string() ? type_value->get<std::string>() : "";
    if (type_value && !type_value->is_string() && !type_value->is_null()) fail(path, "type must be a string or a list of strings");
    return typed(schema, type_name, hint, path);
  }

  std::string typed(const json& schema, const std::string& type, const std::string& hint, const std::string& path) {
    if (type == "object" ||
        (type.empty() && (schema.contains("properties") || schema.contains("additionalProperties")))) {
      return object(schema, hint, path);
    }
    if (type == "array" || (type.empty() && (schema.contains("items") || schema.contains("prefixItems")))) {
      return array(schema, hint, path);
    }
    if (type == "string" || (type.empty() && (schema.contains("pattern") || schema.contains("format")))) {
      return string(schema, hint, path);
    }
    if (type == "integer") return integer(schema, path);
    if (type == "number") return use("number");
    if (type == "boolean") return use("boolean");
    if (type == "null") return use("null");
    if (type.empty()) return use("value");
    fail(path, std::string("unsupported type \"") + type + "\"");
  }

  json merge_all_of(const json& schema, const std::string& path) {
    budget_.charge_copy(schema);
    json merged = schema;
    merged.erase("allOf");
    if (!schema["allOf"].is_array()) fail(path, "allOf must be an array");
    for (const json& part0 : schema["allOf"]) {
      const json& part = part0.is_object() && part0.contains("$ref") && part0["$ref"].is_string()
                             ? resolve(part0["$ref"].get<std::string>(), path)
                             : part0;
      if (!part.is_object()) fail(path, "allOf items must be objects");
      budget_.charge_copy(part);
      for (auto it = part.begin(); it != part.end(); ++it) {
        if (it.key() == "properties" && merged.contains("properties")) {
          for (auto p = it->begin(); p != it->end(); ++p) merged["properties"][p.key()] = *p;
        } else if (it.key() == "required" && merged.contains("required")) {
          for (const json& r : *it) merged["required"].push_back(r);
        } else {
          merged[it.key()] = *it;
        }
      }
    }
    return merged;
  }

  std::string object(const json& schema, const std::string& hint, const std::string& path) {
    static const json kNoProperties = json::object();
    const json& props = schema.contains("properties") ? schema["properties"] : kNoProperties;
    if (!props.is_object()) fail(path, "properties must be an object");
    std::set<std::string> required;
    for (const json& r : schema.value("required", json::array())) {
      if (r.is_string()) required.insert(r.get<std::string>());
    }
    // Additional properties: absent means none when properties are listed.
    std::string additional;
    const bool has_add = schema.contains("additionalProperties");
    if ((!has_add && props.empty()) || (has_add && schema["additionalProperties"] == json(true))) {
      additional = use("string") + std::string(" \":\" ") + use("ws") + std::string(" ") + use("value");
    } else if (has_add && schema["additionalProperties"].is_object()) {
      additional = use("string") + std::string(" \":\" ") + use("ws") + " " +
                   visit(schema["additionalProperties"], hint + "-additional", path + "/additionalProperties");
    }
    const std::string ws = use("ws");
    // kvs in order: required ones first (in property order), then optional.
    struct Slot {
      std::string kv;
      bool optional;
    };
    std::vector<Slot> slots;
    for (int pass = 0; pass < 2; ++pass) {
      for (auto it = props.begin(); it != props.end(); ++it) {
        const bool req = required.count(it.key()) > 0;
        if (req != (pass == 0)) continue;
        const std::string value = visit(*it, hint + std::string("-") + it.key(), path + std::string("/properties/") + it.key());
        const std::string kv = add_named(hint + std::string("-") + it.key() + "-kv",
                                         gbnf_literal(json(it.key()).dump()) + std::string(" ") + ws + std::string(" \":\" ") + ws + std::string(" ") + value);
        slots.push_back({kv, !req});
      }
    }
    // first_i: slots i.. with nothing before; rest_i: slots i.. after a kv.
    std::string first = additional.empty() ? "" : std::string("(") + additional + std::string(" (\",\" ") + ws + std::string(" ") + additional + ")*)?";
    std::string rest = additional.empty() ? "" : std::string("(\",\" ") + ws + std::string(" ") + additional + ")*";
    if (!first.empty()) {
      first = add_named(hint + "-tail", first);
      rest = add_named(hint + "-rest", rest);
    }
    for (size_t i = slots.size(); i-- > 0;) {
      const Slot& s = slots[i];
      std::string f, r;
      if (!s.optional) {
        f = s.kv + (rest.empty() ? "" : std::string(" ") + rest);
        r = std::string("\",\" ") + ws + std::string(" ") + s.kv + (rest.empty() ? "" : std::string(" ") + rest);
      } else {
        f = s.kv + (rest.empty() ? "" : std::string(" ") + rest) + std::string(" | ") + (first.empty() ? "" : first);
        r = std::string("(\",\" ") + ws + std::string(" ") + s.kv + std::string(")?") + (rest.empty() ? "" : std::string(" ") + rest);
      }
      first = add_named(hint + std::string("-from") + std::to_string(i), f);
      rest = add_named(hint + std::string("-after") + std::to_string(i), r);
    }
    return std::string("\"{\" ") + ws + std::string(" ") + (first.empty() ? "" : first + " ") + std::string("\"}\" ") + ws;
  }

  std::string array(const json& schema, const std::string& hint, const std::string& path) {
    const std::string ws = use("ws");
    if (schema.contains("prefixItems")) {
      const json& items = schema["prefixItems"];
      if (!items.is_array()) fail(path, "prefixItems must be an array");
      std::string out = std::string("\"[\" ") + ws;
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += std::string(" \",\" ") + ws;
        out += std::string(" ") + visit(items[i], hint + std::string("-") + std::to_string(i), path + std::string("/prefixItems/") + std::to_string(i));
      }
      return out + std::string(" \"]\" ") + ws;
    }
    std::string item = use("value");
    if (schema.contains("items")) {
      if (schema["items"] == json(false)) return std::string("\"[\" ") + ws + std::string(" \"]\" ") + ws;
      item = visit(schema["items"], hint + "-item", path + "/items");
    }
    item = add_named(hint + "-item", item);
    const auto min = schema.value("minItems", uint64_t{0});
    const bool bounded = schema.contains("maxItems");
    const auto max = schema.value("maxItems", uint64_t{0});
    if (bounded && max < min) fail(path, "maxItems is below minItems");
    if (bounded && max == 0) return std::string("\"[\" ") + ws + std::string(" \"]\" ") + ws;
    const std::string more_min = std::to_string(min > 0 ? min - 1 : 0);
    const std::string more = std::string("(\",\" ") + ws + std::string(" ") + item + ")" +
                             (bounded ? std::string("{") + more_min + std::string(",") + std::to_string(max - 1) + "}" : std::string("{") + more_min + ",}");
    std::string list = std::string("(") + item + std::string(" ") + more + ")";
    if (min == 0) list += "?";
    return std::string("\"[\" ") + ws + std::string(" ") + list + std::string(" \"]\" ") + ws;
  }

  std::string string(const json& schema, const std::string& hint, const std::string& path) {
    const std::string ws = use("ws");
    if (schema.contains("format")) {
      const std::string f = schema["format"].is_string() ? schema["format"].get<std::string>() : "";
      if (f == "date" || f == "time" || f == "date-time" || f == "uuid") return use(f + "-string");
      // Other formats are not constrained (llama.cpp does the same).
    }
    if (schema.contains("pattern")) {
      if (!schema["pattern"].is_string()) fail(path, "pattern must be a string");
      const std::string body = regex_to_gbnf(schema["pattern"].get<std::string>(), use("char"));
      return std::string("\"\\\"\" ") + add_named(hint + "-pattern", body) + std::string(" \"\\\"\" ") + ws;
    }
    if (schema.contains("minLength") || schema.contains("maxLength")) {
      const auto min = schema.value("minLength", uint64_t{0});
      std::string rep = std::string("{") + std::to_string(min) + ",";
      if (schema.contains("maxLength")) {
        const auto max = schema["maxLength"].get<uint64_t>();
        if (max < min) fail(path, "maxLength is below minLength");
        rep += std::to_string(max);
      }
      return std::string("\"\\\"\" ") + use("char") + rep + std::string("} \"\\\"\" ") + ws;
    }
    return use("string");
  }

  std::string integer(const json& schema, const std::string& path) {
    int64_t lo = 0, hi = 0;
    bool has_lo = false, has_hi = false;
    auto bound = [&](const char* key, bool lower, bool exclusive) {
      if (!schema.contains(key) || !schema[key].is_number()) return;
      const double v = schema[key].get<double>();
      if (!std::isfinite(v) || std::fabs(v) > 9e15) fail(path, std::string(key) + " out of range");
      int64_t b = static_cast<int64_t>(lower ? std::ceil(v) : std::floor(v));
      if (exclusive && static_cast<double>(b) == v) b += lower ? 1 : -1;
      if (lower && (!has_lo || b > lo)) lo = b, has_lo = true;
      if (!lower && (!has_hi || b < hi)) hi = b, has_hi = true;
    };
    bound("minimum", true, false);
    bound("exclusiveMinimum", true, true);
    bound("maximum", false, false);
    bound("exclusiveMaximum", false, true);
    if (!has_lo && !has_hi) return use("integer");
    return std::string("(") + integer_range_gbnf(has_lo ? &lo : nullptr, has_hi ? &hi : nullptr) + std::string(") ") + use("ws");
  }
};

}  // namespace

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, const SchemaLimits& limits) {
  return Converter(schema, limits).run();
}

std::string json_schema_to_gbnf(const nlohmann::json& schema, const SchemaLimits& limits) {
  return json_schema_to_gbnf(nlohmann::ordered_json(schema), limits);
}

std::string json_schema_to_gbnf(std::string_view text, const SchemaLimits& limits) {
  json schema;
  try {
    schema = json::parse(text);
  } catch (const json::exception& e) {
    throw InvalidArgument(std::string("json schema is not valid JSON: ") + e.what());
  }
  return json_schema_to_gbnf(schema, limits);
}

std::string json_any_gbnf(bool object_only) {
  return json_schema_to_gbnf(object_only ? json{{"type", "object"}} : json::object());
}

}  // namespace ferrite::grammar
