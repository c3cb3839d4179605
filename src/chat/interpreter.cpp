// Statement execution and expression evaluation. See interpreter.h.
#include "chat/interpreter.h"

#include "chat/error.h"
#include "core/error.h"

namespace ferrite::chat {
namespace {

[[noreturn]] void rethrow_at(const TemplateError& e, int line) {
  if (dynamic_cast<const TemplateLimitError*>(&e)) throw TemplateLimitError(e.message(), line, 0);
  if (dynamic_cast<const TemplateRaisedError*>(&e)) throw TemplateRaisedError(e.message(), line, 0);
  throw TemplateRenderError(e.message(), line, 0);
}

[[noreturn]] void undefined_error(const Value& v) {
  throw TemplateRenderError("'" + v.hint() + "' is undefined", 0, 0);
}

struct CallDepthGuard {
  CallDepthGuard(int& depth, int max) : depth(depth) {
    if (++depth > max) {
      --depth;
      throw TemplateLimitError("macro calls nested deeper than " + std::to_string(max), 0, 0);
    }
  }
  ~CallDepthGuard() { --depth; }
  int& depth;
};

}  // namespace

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_.get()) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

Interpreter::Interpreter(const Limits& limits, std::shared_ptr<Scope> globals)
    : limits_(limits),
      globals_(std::move(globals)),
      deadline_(std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(limits.max_seconds > 0 ? limits.max_seconds : 0.0))) {}

Interpreter::~Interpreter() {
  for (auto& w : mutated_lists_) {
    if (auto l = w.lock()) l->clear();
  }
  for (auto& w : mutated_dicts_) {
    if (auto d = w.lock()) d->clear();
  }
}

void Interpreter::note_mutation(const Value& container) {
  if (container.is_list()) {
    if (mutated_seen_.insert(&container.as_list()).second) mutated_lists_.push_back(container.list_ref());
  } else if (container.is_dict()) {
    if (mutated_seen_.insert(&container.as_dict()).second) mutated_dicts_.push_back(container.dict_ref());
  }
}

void Interpreter::charge(uint64_t units) {
  constexpr unsigned kClockShift = 12;  // the clock and the cancel flag every 4096 steps
  const uint64_t before = work_;
  work_ += units;
  if (work_ > limits_.max_work) {
    throw TemplateLimitError("template exceeded " + std::to_string(limits_.max_work) + " evaluation steps", 0, 0);
  }
  if ((before >> kClockShift) != (work_ >> kClockShift)) check_clock();
}

void Interpreter::check_clock() const {
  if (limits_.cancel && limits_.cancel->load(std::memory_order_relaxed)) {
    throw Cancelled("template rendering cancelled");
  }
  if (limits_.max_seconds > 0 && std::chrono::steady_clock::now() > deadline_) {
    throw TemplateLimitError("template rendering took longer than " + std::to_string(limits_.max_seconds) + " s", 0, 0);
  }
}

void Interpreter::check_list_size(size_t items) const {
  if (items > limits_.max_string_bytes / sizeof(Value)) check_string_size(limits_.max_string_bytes + 1);
}

void Interpreter::charge_alloc(size_t bytes) {
  allocated_ += bytes;
  if (allocated_ > limits_.max_alloc_bytes) {
    throw TemplateLimitError("template built more than " + std::to_string(limits_.max_alloc_bytes) +
                                 " bytes of strings and lists",
                             0, 0);
  }
}

void Interpreter::check_string_size(size_t bytes) const {
  if (bytes > limits_.max_string_bytes) {
    throw TemplateLimitError("template built a value of " + std::to_string(bytes) + " bytes (limit " +
                                 std::to_string(limits_.max_string_bytes) + ")",
                             0, 0);
  }
}

void Interpreter::count_iteration() {
  if (++iterations_ > limits_.max_loop_iterations) {
    throw TemplateLimitError("template exceeded " + std::to_string(limits_.max_loop_iterations) + " loop iterations",
                             0, 0);
  }
  charge(1);
}

void Interpreter::write(const std::string& s) {
  charge_bytes(s.size());
  if (out_->size() + s.size() > limits_.max_output_bytes) {
    throw TemplateLimitError("template output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes", 0, 0);
  }
  *out_ += s;
}

std::string Interpreter::render(const Body& body) {
  std::string out;
  out_ = &out;
  auto root = std::make_shared<Scope>(globals_);
  exec_body(body, root);
  out_ = nullptr;
  return out;
}

std::string Interpreter::capture(const Body& body, const std::shared_ptr<Scope>& scope) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    exec_body(body, scope);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const std::shared_ptr<Scope>& scope) {
  for (const auto& s : body) {
    Flow f = exec(*s, scope);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  try {
    charge(1);
    switch (s.kind) {
      case Stmt::Kind::Text: write(s.text); break;
      case Stmt::Kind::Output: {
        Value v = eval(*s.expr, scope);
        write(v.str(limits_.max_string_bytes));
        break;
      }
      case Stmt::Kind::If:
        for (const auto& [cond, body] : s.branches) {
          if (eval(*cond, scope).truthy()) return exec_body(body, scope);
        }
        return exec_body(s.else_body, scope);
      case Stmt::Kind::For: return exec_for(s, scope);
      case Stmt::Kind::Set: exec_set(s, scope); break;
      case Stmt::Kind::SetBlock: {
        auto inner = std::make_shared<Scope>(scope);
        Value v = Value::string(capture(s.body, inner));
        scope->set(s.targets[0], apply_filters(s.filters, std::move(v), scope));
        break;
      }
      case Stmt::Kind::Macro:
        scope->set(s.name, make_macro(s, scope, s.body, s.params, s.name, nullptr));
        break;
      case Stmt::Kind::CallBlock: {
        Value caller = make_macro(s, scope, s.body, s.params, "caller", nullptr);
        const Expr& call_expr = *s.expr;
        Value fn = eval(*call_expr.children[0], scope);
        CallArgs args = eval_args(call_expr, 1, scope);
        args.keyword.emplace_back("caller", caller);
        write(call(fn, args).str(limits_.max_string_bytes));
        break;
      }
      case Stmt::Kind::FilterBlock: {
        auto inner = std::make_shared<Scope>(scope);
        Value v = Value::string(capture(s.body, inner));
        write(apply_filters(s.filters, std::move(v), scope).str(limits_.max_string_bytes));
        break;
      }
      case Stmt::Kind::Break: return Flow::Break;
      case Stmt::Kind::Continue: return Flow::Continue;
      case Stmt::Kind::With: {
        auto inner = std::make_shared<Scope>(scope);
        for (const auto& p : s.params) inner->set(p.name, eval(*p.default_value, scope));
        return exec_body(s.body, inner);
      }
      case Stmt::Kind::Do: eval(*s.expr, scope); break;
      case Stmt::Kind::Scope: return exec_body(s.body, scope);
    }
  } catch (const TemplateError& e) {
    if (e.line() != 0) throw;
    rethrow_at(e, s.line);
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  Value seq = eval(*s.expr, scope);
  if (!seq.is_undefined() && !seq.is_list() && !seq.is_dict() && !seq.is_string()) {
    throw TemplateRenderError("'" + seq.type_name() + "' object is not iterable", 0, 0);
  }
  List items = iterate(seq);
  if (s.cond) {  // `for x in xs if cond` filters before loop variables are computed
    List kept;
    for (const Value& item : items) {
      count_iteration();
      auto probe = std::make_shared<Scope>(scope);
      assign(s.targets, item, *probe, s.line);
      if (eval(*s.cond, probe).truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(s.else_body, scope);
  const int64_t n = static_cast<int64_t>(items.size());
  // One loop object per loop, updated in place each iteration (as Jinja's
  // LoopContext is): entries in the order of the enum below.
  enum Entry { kIndex, kIndex0, kRevindex, kRevindex0, kFirst, kLast, kPrevitem, kNextitem };
  auto index0 = std::make_shared<int64_t>(0);
  auto last_changed = std::make_shared<std::optional<Value>>();
  Value loop = Value::dict();
  Dict& d = loop.as_dict();
  for (const char* key : {"index", "index0", "revindex", "revindex0", "first", "last", "previtem", "nextitem"}) {
    d.set(key, Value());
  }
  d.set("length", Value::integer(n));
  d.set("depth", Value::integer(1));
  d.set("depth0", Value::integer(0));
  d.set("cycle", Value::callable("loop.cycle", [index0](Interpreter&, CallArgs& args) -> Value {
          if (args.positional.empty()) throw TemplateRenderError("no items for cycling given", 0, 0);
          return args.positional[static_cast<size_t>(*index0) % args.positional.size()];
        }));
  d.set("changed", Value::callable("loop.changed", [last_changed](Interpreter&, CallArgs& args) -> Value {
          Value now = Value::list(args.positional);
          if (*last_changed && (*last_changed)->equals(now)) return Value::boolean(false);
          *last_changed = now;
          return Value::boolean(true);
        }));
  note_mutation(loop);
  for (int64_t i = 0; i < n; ++i) {
    count_iteration();
    *index0 = i;
    d.set_at(kIndex, Value::integer(i + 1));
    d.set_at(kIndex0, Value::integer(i));
    d.set_at(kRevindex, Value::integer(n - i));
    d.set_at(kRevindex0, Value::integer(n - i - 1));
    d.set_at(kFirst, Value::boolean(i == 0));
    d.set_at(kLast, Value::boolean(i == n - 1));
    d.set_at(kPrevitem, i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("loop.previtem"));
    d.set_at(kNextitem, i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("loop.nextitem"));
    auto inner = std::make_shared<Scope>(scope);
    inner->set("loop", loop);
    assign(s.targets, items[static_cast<size_t>(i)], *inner, s.line);
    if (exec_body(s.body, inner) == Flow::Break) break;
  }
  return Flow::Normal;
}

void Interpreter::assign(const std::vector<std::string>& targets, const Value& v, Scope& scope, int line) {
  if (targets.size() == 1) {
    scope.set(targets[0], v);
    return;
  }
  List parts = iterate(v);
  if (parts.size() != targets.size()) {
    throw TemplateRenderError("cannot unpack " + std::to_string(parts.size()) + " values into " +
                                  std::to_string(targets.size()) + " names",
                              0, 0);
  }
  for (size_t i = 0; i < targets.size(); ++i) scope.set(targets[i], parts[i]);
}

void Interpreter::exec_set(const Stmt& s, const std::shared_ptr<Scope>& scope) {
  Value v = eval(*s.expr, scope);
  if (!s.attr.empty()) {
    const Value* ns = scope->lookup(s.targets[0]);
    if (!ns || !ns->is_namespace()) {
      throw TemplateRenderError("cannot assign attribute on non-namespace object '" + s.targets[0] + "'", 0, 0);
    }
    note_mutation(*ns);
    ns->as_dict().set(s.attr, std::move(v));
    return;
  }
  assign(s.targets, v, *scope, s.line);
}

Value Interpreter::make_macro(const Stmt& s, const std::shared_ptr<Scope>& closure, const Body& body,
                              const std::vector<MacroParam>& params, const std::string& name, const Value*) {
  const Stmt* def = &s;
  const Body* code = &body;
  const std::vector<MacroParam>* ps = &params;
  // The macro is usually stored in the scope it closes over: hold that scope
  // weakly so the two do not keep each other alive.
  std::weak_ptr<Scope> weak_closure = closure;
  return Value::callable(name, [this, def, code, ps, weak_closure, name](Interpreter&, CallArgs& args) -> Value {
    CallDepthGuard guard(call_depth_, limits_.max_call_depth);
    std::shared_ptr<Scope> closure = weak_closure.lock();
    if (!closure) throw TemplateRenderError("macro '" + name + "' called after its scope ended", 0, 0);
    auto scope = std::make_shared<Scope>(closure);
    if (args.positional.size() > ps->size()) {
      throw TemplateRenderError("macro '" + name + "' takes not more than " + std::to_string(ps->size()) +
                                    " argument(s)",
                                0, 0);
    }
    std::vector<bool> given(ps->size(), false);
    for (size_t i = 0; i < args.positional.size(); ++i) {
      scope->set((*ps)[i].name, args.positional[i]);
      given[i] = true;
    }
    Value caller;
    for (auto& [k, v] : args.keyword) {
      bool found = false;
      for (size_t i = 0; i < ps->size(); ++i) {
        if ((*ps)[i].name == k) {
          scope->set(k, v);
          given[i] = true;
          found = true;
        }
      }
      if (!found && k == "caller") {
        scope->set("caller", v);
        found = true;
      }
      if (!found) throw TemplateRenderError("macro '" + name + "' takes no keyword argument '" + k + "'", 0, 0);
    }
    for (size_t i = 0; i < ps->size(); ++i) {
      if (given[i]) continue;
      const MacroParam& p = (*ps)[i];
      scope->set(p.name, p.default_value ? eval(*p.default_value, scope) : Value::undefined(p.name));
    }
    (void)def;
    return Value::string(capture(*code, scope));
  });
}

Value Interpreter::apply_filters(const std::vector<ExprPtr>& filters, Value v, const std::shared_ptr<Scope>& scope) {
  for (const auto& f : filters) {
    CallArgs args = eval_args(*f, 1, scope);
    v = apply_filter(*this, f->name, v, args);
  }
  return v;
}

CallArgs Interpreter::eval_args(const Expr& e, size_t first, const std::shared_ptr<Scope>& scope) {
  CallArgs args;
  for (size_t i = first; i < e.children.size(); ++i) args.positional.push_back(eval(*e.children[i], scope));
  for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v, scope));
  return args;
}

Value Interpreter::call(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) undefined_error(fn);
  if (!fn.is_callable()) throw TemplateRenderError("'" + fn.type_name() + "' object is not callable", 0, 0);
  return fn.as_callable().fn(*this, args);
}

Value Interpreter::eval(const Expr& e, const std::shared_ptr<Scope>& scope) {
  charge(1);
  switch (e.kind) {
    case Expr::Kind::Literal: return e.literal;
    case Expr::Kind::Name: {
      const Value* v = scope->lookup(e.name);
      return v ? *v : Value::undefined(e.name);
    }
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      List items;
      items.reserve(e.children.size());
      for (const auto& c : e.children) items.push_back(eval(*c, scope));
      if (e.kind == Expr::Kind::Tuple) return Value::tuple(std::move(items));
      return Value::list(std::move(items));
    }
    case Expr::Kind::Dict: {
      Value d = Value::dict();
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        Value k = eval(*e.children[i], scope);
        d.as_dict().set(k, eval(*e.children[i + 1], scope));
      }
      return d;
    }
    case Expr::Kind::Unary: {
      Value v = eval(*e.children[0], scope);
      if (e.name == "not") return Value::boolean(!v.truthy());
      if (v.is_undefined()) undefined_error(v);
      if (v.is_int() || v.is_bool()) return Value::integer(e.name == "-" ? -v.as_int() : v.as_int());
      if (v.is_float()) return Value::number(e.name == "-" ? -v.as_double() : v.as_double());
      throw TemplateRenderError("bad operand type for unary " + e.name + ": '" + v.type_name() + "'", 0, 0);
    }
    case Expr::Kind::Binary: return eval_binary(e, scope);
    case Expr::Kind::And: {
      Value a = eval(*e.children[0], scope);
      return a.truthy() ? eval(*e.children[1], scope) : a;
    }
    case Expr::Kind::Or: {
      Value a = eval(*e.children[0], scope);
      return a.truthy() ? a : eval(*e.children[1], scope);
    }
    case Expr::Kind::Compare: return eval_compare(e, scope);
    case Expr::Kind::Cond:
      if (eval(*e.children[1], scope).truthy()) return eval(*e.children[0], scope);
      if (e.children[2]) return eval(*e.children[2], scope);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    case Expr::Kind::GetAttr: {
      Value obj = eval(*e.children[0], scope);
      if (obj.is_undefined()) undefined_error(obj);
      return get_attr(*this, obj, e.name);
    }
    case Expr::Kind::GetItem: {
      Value obj = eval(*e.children[0], scope);
      if (obj.is_undefined()) undefined_error(obj);
      return get_item(*this, obj, eval(*e.children[1], scope));
    }
    case Expr::Kind::Slice: return eval_slice(e, scope);
    case Expr::Kind::Call: {
      Value fn = eval(*e.children[0], scope);
      CallArgs args = eval_args(e, 1, scope);
      return call(fn, args);
    }
    case Expr::Kind::Filter: {
      Value input = eval(*e.children[0], scope);
      CallArgs args = eval_args(e, 1, scope);
      return apply_filter(*this, e.name, input, args);
    }
    case Expr::Kind::Test: {
      if (!has_test(e.name)) throw TemplateRenderError("no test named '" + e.name + "'", 0, 0);
      Value input = eval(*e.children[0], scope);
      CallArgs args = eval_args(e, 1, scope);
      return Value::boolean(apply_test(*this, e.name, input, args) != e.negated);
    }
  }
  return Value();
}

Value Interpreter::eval_binary(const Expr& e, const std::shared_ptr<Scope>& scope) {
  Value a = eval(*e.children[0], scope);
  Value b = eval(*e.children[1], scope);
  if (e.name == "~") {
    std::string s = a.str(limits_.max_string_bytes);
    std::string t = b.str(limits_.max_string_bytes);
    check_string_size(s.size() + t.size());
    charge_bytes(s.size() + t.size());
    charge_alloc(s.size() + t.size());
    return Value::string(s + t);
  }
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  return arithmetic(*this, e.name, a, b);
}

Value Interpreter::eval_compare(const Expr& e, const std::shared_ptr<Scope>& scope) {
  Value left = eval(*e.children[0], scope);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.children[i + 1], scope);
    const std::string& op = e.ops[i];
    bool ok = false;
    if (op == "==") {
      ok = left.equals(right);
    } else if (op == "!=") {
      ok = !left.equals(right);
    } else if (op == "<") {
      ok = less_than(left, right);
    } else if (op == ">") {
      ok = less_than(right, left);
    } else if (op == "<=") {
      ok = !less_than(right, left);
    } else if (op == ">=") {
      ok = !less_than(left, right);
    } else if (op == "in" || op == "notin") {
      if (right.is_undefined()) {
        ok = false;
      } else if (!right.is_list() && !right.is_dict() && !right.is_string()) {
        throw TemplateRenderError("argument of type '" + right.type_name() + "' is not iterable", 0, 0);
      } else {
        ok = contains(right, left);
      }
      if (op == "notin") ok = !ok;
    }
    if (!ok) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

}  // namespace ferrite::chat
