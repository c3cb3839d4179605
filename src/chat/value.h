// Values of the template language: Jinja's view of Python objects. Lists,
// dicts and namespaces are shared by reference (as in Python), everything
// else is copied. Dicts keep insertion order, like Python's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferrite::chat {

class Value;
class Interpreter;

using List = std::vector<Value>;

// Arguments of a call: positional then keyword, as written.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or named `name`; nullptr when absent.
  const Value* get(size_t index, std::string_view name) const;
};

struct Callable {
  std::string name;
  std::function<Value(Interpreter&, CallArgs&)> fn;
};

class Dict;

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

  Value() = default;  // Undefined
  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value list(List items = {});
  static Value tuple(List items);  // a list that prints as (a, b)
  static Value dict();
  static Value namespace_();  // a dict whose keys are attributes that `set ns.x` may assign
  static Value callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_tuple() const { return kind_ == Kind::List && b_; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_callable() const { return kind_ == Kind::Callable; }
  bool is_namespace() const;

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_double() const;  // Int, Float or Bool
  const std::string& as_string() const { return s_; }
  List& as_list() const { return *list_; }
  Dict& as_dict() const { return *dict_; }
  std::weak_ptr<Dict> dict_ref() const { return dict_; }
  std::weak_ptr<List> list_ref() const { return list_; }
  const Callable& as_callable() const { return *fn_; }
  // For Undefined: what was looked up (for error messages).
  const std::string& hint() const { return s_; }

  // Python truthiness.
  bool truthy() const;
  // str(value) as Jinja prints it ('' for Undefined and, in print, None prints 'None').
  // Containers longer than `max_bytes` printed throw TemplateLimitError.
  std::string str(size_t max_bytes = kMaxReprBytes) const;
  // repr(value) as Python writes it inside containers.
  std::string repr(size_t max_bytes = kMaxReprBytes) const;
  // A cap on printing a container whatever the caller's limit (a list of
  // lists sharing their items prints far more bytes than it holds).
  static constexpr size_t kMaxReprBytes = 64u << 20;
  // Python ==.
  bool equals(const Value& other) const;
  // Name of the type for messages ("string", "list", ...).
  std::string type_name() const;

 private:
  void repr_at(std::string& out, int depth, size_t max_bytes) const;
  bool equals_at(const Value& other, int depth) const;

  Kind kind_ = Kind::Undefined;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Callable> fn_;
};

// An insertion-ordered mapping. Keys are values (almost always strings).
class Dict {
 public:
  bool is_namespace = false;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(const Value& key, Value v);
  void set(std::string_view key, Value v) { set(Value::string(std::string(key)), std::move(v)); }
  bool erase(const Value& key);
  size_t size() const { return items_.size(); }
  void clear() { items_.clear(); }
  // Replaces the value of the i-th entry (insertion order).
  void set_at(size_t i, Value v) { items_.at(i).second = std::move(v); }
  const std::vector<std::pair<Value, Value>>& items() const { return items_; }

 private:
  std::vector<std::pair<Value, Value>> items_;
};

// Python's repr() of a float ("1.0", "0.1", "1e+20", "inf", "nan").
std::string python_float_repr(double v);
// Python's repr() of a str (quotes chosen as Python does).
std::string python_string_repr(const std::string& s);

// Python ordering (<) for numbers and strings and lists; throws
// TemplateRenderError on types Python cannot compare.
bool less_than(const Value& a, const Value& b);

}  // namespace ferrite::chat
