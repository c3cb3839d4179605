// Global functions templates call: range, dict, namespace, raise_exception,
// strftime_now, cycler, joiner.
#include <ctime>

#include "chat/args.h"
#include "chat/interpreter.h"

namespace ferrite::chat {
namespace {

// strftime output longer than this is refused (formats are short).
constexpr size_t kMaxStrftimeBytes = 1024;

Value range_fn(Interpreter& in, CallArgs& a) {
  int64_t start = 0, stop = 0, step = 1;
  const size_t n = a.positional.size();
  auto num = [&](size_t i) { return int_arg(a, i, "", "range", 0); };
  if (n == 1) {
    stop = num(0);
  } else if (n == 2 || n == 3) {
    start = num(0);
    stop = num(1);
    if (n == 3) step = num(2);
  } else {
    arg_error("range", "expected 1 to 3 arguments");
  }
  if (step == 0) arg_error("range", "arg 3 must not be zero");
  // Count without overflow: ceil((stop - start) / step) when positive.
  __int128 span = static_cast<__int128>(stop) - start;
  __int128 count = 0;
  if ((step > 0 && span > 0) || (step < 0 && span < 0)) {
    const __int128 s = step;
    count = (span + s + (step > 0 ? -1 : 1)) / s;
  }
  if (count > static_cast<__int128>(in.limits().max_loop_iterations)) {
    throw TemplateLimitError("range() of more than " + std::to_string(in.limits().max_loop_iterations) + " items", 0,
                             0);
  }
  List out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) out.push_back(Value::integer(start + i * step));
  in.charge(static_cast<uint64_t>(count));
  return Value::list(std::move(out));
}

Value fill_dict(Value d, CallArgs& a, const char* fn) {
  if (!a.positional.empty()) {
    const Value& src = a.positional[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.as_dict().items()) d.as_dict().set(k, v);
    } else if (src.is_list()) {
      for (const Value& pair : src.as_list()) {
        if (!pair.is_list() || pair.as_list().size() != 2) arg_error(fn, "sequence elements must be pairs");
        d.as_dict().set(pair.as_list()[0], pair.as_list()[1]);
      }
    } else {
      arg_error(fn, "argument must be a mapping or a sequence of pairs");
    }
  }
  for (const auto& [k, v] : a.keyword) d.as_dict().set(k, v);
  return d;
}

Value make_cycler(Interpreter&, CallArgs& a) {
  if (a.positional.empty()) arg_error("cycler", "needs at least one item");
  auto items = std::make_shared<List>(a.positional);
  auto pos = std::make_shared<size_t>(0);
  Value obj = Value::namespace_();
  obj.as_dict().set("current", (*items)[0]);
  // The methods live inside the object: they hold it weakly, so no cycle.
  std::weak_ptr<Dict> self = obj.dict_ref();
  obj.as_dict().set("next", Value::callable("cycler.next", [items, pos, self](Interpreter&, CallArgs&) {
                      Value v = (*items)[*pos];
                      *pos = (*pos + 1) % items->size();
                      if (auto d = self.lock()) d->set("current", (*items)[*pos]);
                      return v;
                    }));
  obj.as_dict().set("reset", Value::callable("cycler.reset", [items, pos, self](Interpreter&, CallArgs&) {
                      *pos = 0;
                      if (auto d = self.lock()) d->set("current", (*items)[0]);
                      return Value::none();
                    }));
  return obj;
}

}  // namespace

void install_builtins(Scope& globals, int64_t now_utc_seconds) {
  globals.set("range", Value::callable("range", range_fn));
  globals.set("dict", Value::callable("dict", [](Interpreter&, CallArgs& a) { return fill_dict(Value::dict(), a, "dict"); }));
  globals.set("namespace", Value::callable("namespace", [](Interpreter&, CallArgs& a) {
                return fill_dict(Value::namespace_(), a, "namespace");
              }));
  globals.set("raise_exception", Value::callable("raise_exception", [](Interpreter&, CallArgs& a) -> Value {
                const Value* msg = a.get(0, "message");
                throw TemplateRaisedError(msg ? msg->str() : "raise_exception called", 0, 0);
              }));
  globals.set("strftime_now", Value::callable("strftime_now", [now_utc_seconds](Interpreter&, CallArgs& a) {
                const std::string fmt = str_arg(a, 0, "format", "strftime_now");
                std::tm tm{};
                if (now_utc_seconds >= 0) {
                  const std::time_t t = static_cast<std::time_t>(now_utc_seconds);
                  gmtime_r(&t, &tm);
                } else {
                  const std::time_t t = std::time(nullptr);
                  localtime_r(&t, &tm);
                }
                if (fmt.empty()) return Value::string("");
                char buf[kMaxStrftimeBytes];
                const size_t n = std::strftime(buf, sizeof(buf), fmt.c_str(), &tm);
                if (n == 0) arg_error("strftime_now", "format produced no output or is too long");
                return Value::string(std::string(buf, n));
              }));
  globals.set("cycler", Value::callable("cycler", make_cycler));
  globals.set("joiner", Value::callable("joiner", [](Interpreter&, CallArgs& a) {
                const Value* sep = a.get(0, "sep");
                const std::string s = sep ? sep->str() : ", ";
                auto used = std::make_shared<bool>(false);
                return Value::callable("joiner", [s, used](Interpreter&, CallArgs&) {
                  if (!*used) {
                    *used = true;
                    return Value::string("");
                  }
                  return Value::string(s);
                });
              }));
}

}  // namespace ferrite::chat
