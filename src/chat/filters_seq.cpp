// Filters on sequences and mappings: length, first, last, join, list, map,
// select/reject(attr), items, dictsort, unique, sort, reverse, batch, sum,
// min, max, attr; and apply_filter, which dispatches by name.
#include <algorithm>

#include "chat/args.h"
#include "chat/filters.h"
#include "chat/str_util.h"
#include "chat/utf8.h"

namespace ferrite::chat {
namespace {

// Jinja's attribute getter: "a.b.0" looks up a, then b, then index 0.
Value lookup_path(Interpreter& in, const Value& item, const std::string& path) {
  Value cur = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    Value key = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos
                    ? Value::integer(std::stoll(part))
                    : Value::string(part);
    if (cur.is_undefined()) return cur;
    cur = get_item(in, cur, key);
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Value sort_key(Interpreter& in, const Value& v, const Value* attribute, bool case_sensitive) {
  Value k = attribute && !attribute->is_none() ? lookup_path(in, v, attribute->str()) : v;
  if (!case_sensitive && k.is_string()) return Value::string(py_lower(k.as_string()));
  return k;
}

// select / reject / selectattr / rejectattr share this.
Value select_items(Interpreter& in, const Value& seq, CallArgs& a, bool by_attr, bool keep) {
  const char* fn = by_attr ? (keep ? "selectattr" : "rejectattr") : (keep ? "select" : "reject");
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (a.positional.empty()) arg_error(fn, "missing attribute name");
    attr = a.positional[next++].str();
  }
  std::string test;
  CallArgs test_args;
  if (next < a.positional.size()) {
    test = a.positional[next++].str();
    test_args.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(next), a.positional.end());
    test_args.keyword = a.keyword;
    if (!has_test(test)) throw TemplateRenderError("no test named '" + test + "'", 0, 0);
  }
  List out;
  for (const Value& item : iterate(seq)) {
    in.charge(1);
    Value probe = by_attr ? lookup_path(in, item, attr) : item;
    const bool ok = test.empty() ? probe.truthy() : apply_test(in, test, probe, test_args);
    if (ok == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value min_max(Interpreter& in, const Value& seq, CallArgs& a, bool want_max) {
  const bool cs = bool_arg(a, 0, "case_sensitive", false);
  const Value* attr = opt_arg(a, 1, "attribute");
  List items = iterate(seq);
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  size_t best = 0;
  Value best_key = sort_key(in, items[0], attr, cs);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = sort_key(in, items[i], attr, cs);
    if (want_max ? less_than(best_key, k) : less_than(k, best_key)) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

}  // namespace

const FilterTable& sequence_filters() {
  static const FilterTable kTable = {
      {"length", [](Interpreter&, const Value& v, CallArgs&) {
         if (v.is_string()) return Value::integer(static_cast<int64_t>(utf8_length(v.as_string())));
         if (v.is_list()) return Value::integer(static_cast<int64_t>(v.as_list().size()));
         if (v.is_dict()) return Value::integer(static_cast<int64_t>(v.as_dict().size()));
         if (v.is_undefined()) return Value::integer(0);
         throw TemplateRenderError("object of type '" + v.type_name() + "' has no len()", 0, 0);
       }},
      {"first", [](Interpreter&, const Value& v, CallArgs&) {
         List items = iterate(v);
         return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
       }},
      {"last", [](Interpreter&, const Value& v, CallArgs&) {
         List items = iterate(v);
         return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
       }},
      {"join", [](Interpreter& in, const Value& v, CallArgs& a) {
         const Value* d = opt_arg(a, 0, "d");
         const std::string sep = d ? d->str() : "";
         const Value* attr = opt_arg(a, 1, "attribute");
         std::string out;
         bool first = true;
         for (const Value& item : iterate(v)) {
           if (!first) out += sep;
           first = false;
           out += (attr && !attr->is_none() ? lookup_path(in, item, attr->str()) : item).str(in.limits().max_string_bytes);
           in.check_string_size(out.size());
         }
         in.charge_bytes(out.size());
         in.charge_alloc(out.size());
         return Value::string(std::move(out));
       }},
      {"list", [](Interpreter&, const Value& v, CallArgs&) { return Value::list(iterate(v)); }},
      {"map", [](Interpreter& in, const Value& v, CallArgs& a) {
         List out;
         if (const Value* attr = a.get(99, "attribute")) {
           const Value* dflt = a.get(99, "default");
           for (const Value& item : iterate(v)) {
             Value x = lookup_path(in, item, attr->str());
             out.push_back(x.is_undefined() && dflt ? *dflt : x);
           }
           return Value::list(std::move(out));
         }
         if (a.positional.empty()) arg_error("map", "missing filter name or attribute");
         const std::string filter = a.positional[0].str();
         CallArgs rest;
         rest.positional.assign(a.positional.begin() + 1, a.positional.end());
         rest.keyword = a.keyword;
         for (const Value& item : iterate(v)) {
           CallArgs copy = rest;
           out.push_back(apply_filter(in, filter, item, copy));
         }
         return Value::list(std::move(out));
       }},
      {"select", [](Interpreter& in, const Value& v, CallArgs& a) { return select_items(in, v, a, false, true); }},
      {"reject", [](Interpreter& in, const Value& v, CallArgs& a) { return select_items(in, v, a, false, false); }},
      {"selectattr",
       [](Interpreter& in, const Value& v, CallArgs& a) { return select_items(in, v, a, true, true); }},
      {"rejectattr",
       [](Interpreter& in, const Value& v, CallArgs& a) { return select_items(in, v, a, true, false); }},
      {"items", [](Interpreter&, const Value& v, CallArgs&) {
         List out;
         if (v.is_undefined()) return Value::list();
         if (!v.is_dict()) throw TemplateRenderError("items filter needs a mapping, not " + v.type_name(), 0, 0);
         for (const auto& [k, x] : v.as_dict().items()) out.push_back(Value::tuple({k, x}));
         return Value::list(std::move(out));
       }},
      {"dictsort", [](Interpreter&, const Value& v, CallArgs& a) {
         if (!v.is_dict()) throw TemplateRenderError("dictsort filter needs a mapping, not " + v.type_name(), 0, 0);
         const bool cs = bool_arg(a, 0, "case_sensitive", false);
         const Value* by = opt_arg(a, 1, "by");
         const size_t pos = by && by->str() == "value" ? 1 : 0;
         const bool reverse = bool_arg(a, 2, "reverse", false);
         std::vector<std::pair<Value, Value>> items = v.as_dict().items();
         auto key = [&](const std::pair<Value, Value>& p) {
           const Value& k = pos == 0 ? p.first : p.second;
           return !cs && k.is_string() ? Value::string(py_lower(k.as_string())) : k;
         };
         std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
           return reverse ? less_than(key(y), key(x)) : less_than(key(x), key(y));
         });
         List out;
         for (auto& [k, x] : items) out.push_back(Value::tuple({k, x}));
         return Value::list(std::move(out));
       }},
      {"unique", [](Interpreter& in, const Value& v, CallArgs& a) {
         const bool cs = bool_arg(a, 0, "case_sensitive", false);
         const Value* attr = opt_arg(a, 1, "attribute");
         List out;
         List seen;
         for (const Value& item : iterate(v)) {
           Value k = sort_key(in, item, attr, cs);
           bool dup = false;
           for (const Value& s : seen) dup = dup || s.equals(k);
           in.charge(seen.size() + 1);
           if (!dup) {
             seen.push_back(k);
             out.push_back(item);
           }
         }
         return Value::list(std::move(out));
       }},
      {"sort", [](Interpreter& in, const Value& v, CallArgs& a) {
         const bool reverse = bool_arg(a, 0, "reverse", false);
         const bool cs = bool_arg(a, 1, "case_sensitive", false);
         const Value* attr = opt_arg(a, 2, "attribute");
         List items = iterate(v);
         std::vector<std::pair<Value, Value>> keyed;
         for (const Value& item : items) keyed.emplace_back(sort_key(in, item, attr, cs), item);
         std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
           return reverse ? less_than(y.first, x.first) : less_than(x.first, y.first);
         });
         List out;
         for (auto& [k, item] : keyed) out.push_back(item);
         return Value::list(std::move(out));
       }},
      {"reverse", [](Interpreter&, const Value& v, CallArgs&) {
         if (v.is_string()) {
           auto cps = utf8_decode(v.as_string());
           std::reverse(cps.begin(), cps.end());
           return Value::string(utf8_encode(cps, 0, cps.size()));
         }
         List items = iterate(v);
         std::reverse(items.begin(), items.end());
         return Value::list(std::move(items));
       }},
      {"batch", [](Interpreter&, const Value& v, CallArgs& a) {
         const int64_t n = int_arg(a, 0, "linecount", "batch", 1);
         if (n <= 0) arg_error("batch", "linecount must be positive");
         const Value* fill = opt_arg(a, 1, "fill_with");
         List out;
         List cur;
         for (const Value& item : iterate(v)) {
           cur.push_back(item);
           if (static_cast<int64_t>(cur.size()) == n) {
             out.push_back(Value::list(std::move(cur)));
             cur.clear();
           }
         }
         if (!cur.empty()) {
           if (fill && !fill->is_none()) {
             while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*fill);
           }
           out.push_back(Value::list(std::move(cur)));
         }
         return Value::list(std::move(out));
       }},
      {"sum", [](Interpreter& in, const Value& v, CallArgs& a) {
         const Value* attr = opt_arg(a, 0, "attribute");
         const Value* start = opt_arg(a, 1, "start");
         Value total = start ? *start : Value::integer(0);
         for (const Value& item : iterate(v)) {
           total = arithmetic(in, "+", total, attr && !attr->is_none() ? lookup_path(in, item, attr->str()) : item);
         }
         return total;
       }},
      {"min", [](Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false); }},
      {"max", [](Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true); }},
      {"attr", [](Interpreter& in, const Value& v, CallArgs& a) {
         const std::string name = req_arg(a, 0, "name", "attr").str();
         Value r = get_attr(in, v, name);
         // Python's getattr on a dict sees its methods, not its keys.
         if (v.is_dict() && !v.is_namespace() && !r.is_callable()) return Value::undefined(name);
         return r;
       }},
  };
  return kTable;
}

Value apply_filter(Interpreter& in, const std::string& name, const Value& input, CallArgs& args) {
  std::string n = name;
  if (n == "d") n = "default";
  if (n == "e") n = "escape";
  if (n == "count") n = "length";
  if (auto it = text_filters().find(n); it != text_filters().end()) return it->second(in, input, args);
  if (auto it = sequence_filters().find(n); it != sequence_filters().end()) return it->second(in, input, args);
  throw TemplateRenderError("no filter named '" + name + "'", 0, 0);
}

}  // namespace ferrite::chat
