// Tree-walking evaluator of a parsed template, with the sandbox limits.
// Scopes follow Jinja: a for-loop iteration, macro call, `with` block or
// call block gets its own scope; `if` does not; assignments never leak out
// of a loop (namespaces are how templates carry state out).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chat/ast.h"
#include "chat/value.h"

namespace ferrite::chat {

// Limits that turn a hostile template into TemplateLimitError. Sizes are
// bytes: a list counts sizeof(Value) a item (plus what its items hold when
// it is printed or serialized).
struct Limits {
  uint64_t max_loop_iterations = 1'000'000;  // summed over every loop of a render
  int max_call_depth = 64;                     // nested macro / caller() calls
  size_t max_output_bytes = 16u << 20;         // rendered text (and any captured block)
  size_t max_string_bytes = 16u << 20;         // one string or list built by the template
  uint64_t max_alloc_bytes = 256u << 20;       // every string and list built, summed over the render
  uint64_t max_work = 100'000'000;             // evaluation steps (nodes, bytes copied / 64)
  double max_seconds = 10.0;                   // wall time of a render (<= 0: none)
  const std::atomic<bool>* cancel = nullptr;   // set by another thread to stop (ferrite::Cancelled)
};

// Recursive structures (lists holding themselves, deep JSON) deeper than
// this are refused by str/repr/tojson/comparison.
constexpr int kMaxValueDepth = 256;

class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent = nullptr) : parent_(std::move(parent)) {}
  const Value* lookup(const std::string& name) const;
  void set(const std::string& name, Value v) { vars_[name] = std::move(v); }

 private:
  std::shared_ptr<Scope> parent_;
  std::unordered_map<std::string, Value> vars_;
};

class Interpreter {
 public:
  Interpreter(const Limits& limits, std::shared_ptr<Scope> globals);

  // Renders a template body in a fresh top-level scope.
  std::string render(const Body& body);

  Value eval(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value call(const Value& fn, CallArgs& args);

  // Sandbox accounting, used by filters and methods too.
  void charge(uint64_t units);
  void charge_bytes(size_t bytes) { charge(bytes / kBytesPerWorkUnit + 1); }
  void check_string_size(size_t bytes) const;
  // A list of `items` values about to be built.
  void check_list_size(size_t items) const;
  // A string of `bytes` or a list of `items` built: counted against max_alloc_bytes.
  void charge_alloc(size_t bytes);
  void charge_list_alloc(size_t items) { charge_alloc(items * sizeof(Value)); }
  void count_iteration();
  const Limits& limits() const { return limits_; }

  // Records a list or dict changed after creation (append, update, `set
  // ns.x`): only those can come to contain themselves, and the interpreter
  // empties them when it ends so that such cycles are not leaked.
  void note_mutation(const Value& container);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

 private:
  static constexpr size_t kBytesPerWorkUnit = 64;
  enum class Flow { Normal, Break, Continue };

  Flow exec_body(const Body& body, const std::shared_ptr<Scope>& scope);
  Flow exec(const Stmt& s, const std::shared_ptr<Scope>& scope);
  Flow exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope);
  void exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope);
  void assign(const std::vector<std::string>& targets, const Value& v, Scope& scope, int line);
  Value make_macro(const Stmt& s, const std::shared_ptr<Scope>& closure, const Body& body,
                   const std::vector<MacroParam>& params, const std::string& name, const Value* caller);
  std::string capture(const Body& body, const std::shared_ptr<Scope>& scope);
  Value apply_filters(const std::vector<ExprPtr>& filters, Value v, const std::shared_ptr<Scope>& scope);
  void write(const std::string& s);

  Value eval_binary(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_compare(const Expr& e, const std::shared_ptr<Scope>& scope);
  Value eval_slice(const Expr& e, const std::shared_ptr<Scope>& scope);
  CallArgs eval_args(const Expr& e, size_t first, const std::shared_ptr<Scope>& scope);

  Limits limits_;
  std::shared_ptr<Scope> globals_;
  std::string* out_ = nullptr;
  void check_clock() const;

  uint64_t iterations_ = 0;
  uint64_t work_ = 0;
  uint64_t allocated_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  int call_depth_ = 0;
  std::unordered_set<const void*> mutated_seen_;
  std::vector<std::weak_ptr<List>> mutated_lists_;
  std::vector<std::weak_ptr<Dict>> mutated_dicts_;
};

// The operations below live in their own files (filters.cpp, tests.cpp,
// attributes.cpp, operators.cpp) and are shared by the evaluator.

Value apply_filter(Interpreter& in, const std::string& name, const Value& input, CallArgs& args);
bool apply_test(Interpreter& in, const std::string& name, const Value& input, CallArgs& args);
bool has_test(const std::string& name);
// obj.name: methods of str/dict/list first, then the key (Jinja's getattr).
Value get_attr(Interpreter& in, const Value& obj, const std::string& name);
// obj[key]: the key or index first, then a method (Jinja's getitem).
Value get_item(Interpreter& in, const Value& obj, const Value& key);
// Iterating a value as a for loop does: list items, dict keys, string characters.
List iterate(const Value& v);
// `needle in haystack`.
bool contains(const Value& haystack, const Value& needle);
// Python's + - * / // % ** on values; throws TemplateRenderError on bad types.
Value arithmetic(Interpreter& in, const std::string& op, const Value& a, const Value& b);
// Globals every template sees: range, dict, namespace, raise_exception,
// strftime_now, cycler, joiner.
// `now_utc_seconds` fixes the clock of strftime_now (UTC) for reproducible
// renders; a negative value means the local time of the host.
void install_builtins(Scope& globals, int64_t now_utc_seconds = -1);

}  // namespace ferrite::chat
