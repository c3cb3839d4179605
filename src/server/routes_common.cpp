// The route wrapper, error responses and prompt tokenization shared by every
// endpoint.
#include <limits>
#include <string>

#include "chat/error.h"
#include "server/api_error.h"
#include "server/request_params.h"
#include "server/routes.h"

namespace ferrite::server {

ServerState::ServerState(Engine& e, ServerOptions o)
    : engine(e),
      opt(std::move(o)),
      chat(e.model().file(), opt.chat_template),
      guard(e.tokenizer().vocab()),
      fim(find_fim_tokens(e.model().file(), e.tokenizer())) {}

const Route* Routes::find(const std::string& method, const std::string& path, bool* path_known) const {
  if (path_known) *path_known = false;
  for (const Route& r : routes_) {
    const bool prefix = r.path.size() > 1 && r.path.back() == '/';  // "/" itself is exact
    const bool match = prefix ? path.size() > r.path.size() && path.compare(0, r.path.size(), r.path) == 0
                              : path == r.path;
    if (!match) continue;
    if (path_known) *path_known = true;
    if (r.method == method) return &r;
  }
  return nullptr;
}

void HttpCounters::note_disconnect() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++disconnects_;
  }
  cv_.notify_all();
}

uint64_t HttpCounters::disconnects() const {
  std::lock_guard<std::mutex> lock(mu_);
  return disconnects_;
}

void HttpCounters::wait_disconnects(uint64_t n) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return disconnects_ >= n; });
}

RequestRecord& current_record() {
  thread_local RequestRecord record;
  return record;
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void set_json(Response& res, const Json& body, int status) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void set_error(ServerState& st, Response& res, int status, const std::string& type,
               const std::string& message, const std::string& param, const std::string& code) {
  if (status == kStatusUnavailable) {
    ++st.counters.busy;
    res.set_header("Retry-After", std::to_string(kRetryAfterSeconds));
  }
  set_json(res, error_body(status, type, message, param, code), status);
}

// Requests nest a few levels (messages, tools' parameter schemas); deeper
// input is refused while parsing, before a deep value exists: copying or
// rendering one recurses once per level and would overflow the stack.
namespace {

constexpr int kMaxJsonDepth = 128;

}  // namespace

Json parse_request_json(const std::string& text) {
  const auto limit_depth = [](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxJsonDepth) {
      throw bad_request("the request body nests JSON deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    return true;
  };
  Json body = Json::parse(text, limit_depth, false);
  if (body.is_discarded()) throw bad_request("the request body is not valid JSON");
  return body;
}

Handler json_route(ServerState& st, bool parse_body, JsonRoute fn) {
  return [&st, parse_body, fn = std::move(fn)](const Request& req, Response& res) {
    try {
      Json body;
      if (parse_body) {
        body = req.body.empty() ? Json::object() : parse_request_json(req.body);
        if (!body.is_object()) throw bad_request("the request body must be a JSON object");
      }
      fn(body, req, res);
    } catch (const ApiError& e) {
      set_error(st, res, e.status(), e.type(), e.what(), e.param(), e.code());
    } catch (const Cancelled& e) {
      // The client went away (or the server is stopping) while its request
      // was converted or rendered.
      set_error(st, res, kStatusUnavailable, "server_error", e.what(), "", "cancelled");
    } catch (const InvalidField& e) {
      set_error(st, res, kStatusBadRequest, "invalid_request_error", e.what(), e.field());
    } catch (const InvalidArgument& e) {
      set_error(st, res, kStatusBadRequest, "invalid_request_error", e.what());
    } catch (const Json::exception& e) {
      set_error(st, res, kStatusBadRequest, "invalid_request_error", std::string("bad JSON value: ") + e.what());
    } catch (const std::exception& e) {
      set_error(st, res, kStatusInternal, "server_error", e.what());
    }
  };
}

std::unique_ptr<http::GoneGuard> watch_client(ServerState& st, const std::shared_ptr<http::ClientLink>& client,
                                              const std::vector<std::shared_ptr<Task>>& tasks) {
  HttpCounters* counters = &st.counters;
  return std::make_unique<http::GoneGuard>(client, [tasks, counters] {
    counters->note_disconnect();
    for (const auto& t : tasks) t->cancel();
  });
}

TaskHold::~TaskHold() {
  guard.reset();
  for (const auto& t : tasks) t->cancel();
}

std::shared_ptr<TaskHold> hold_tasks(ServerState& st, const std::shared_ptr<http::ClientLink>& client,
                                     const std::vector<std::shared_ptr<Task>>& tasks) {
  auto hold = std::make_shared<TaskHold>();
  hold->tasks = tasks;
  hold->guard = watch_client(st, client, tasks);
  return hold;
}

chat::Limits template_limits(const ServerState& st, const Request& req) {
  chat::Limits l = st.opt.template_limits;
  l.cancel = req.client->flag();
  return l;
}

grammar::SchemaLimits schema_limits(const ServerState& st, const Request& req) {
  grammar::SchemaLimits l = st.opt.schema_limits;
  l.cancel = req.client->flag();
  return l;
}

ApiError event_error(const Event& ev) {
  if (ev.finish == FinishReason::Error && ev.error_kind == ErrorKind::BadRequest) {
    return bad_request(ev.error.empty() ? std::string("the request's grammar failed") : ev.error, "grammar",
                       "grammar_failed");
  }
  try {
    throw_for(ev);
  } catch (const ApiError& e) {
    return e;
  }
}

Completion collect_result(Task& task) {
  try {
    return collect(task);
  } catch (const ApiError& e) {
    if (e.status() == kStatusInternal && task.error_kind() == ErrorKind::BadRequest) {
      throw bad_request(e.what(), "grammar", "grammar_failed");
    }
    throw;
  }
}

void check_model_name(const ServerState& st, const Json& body) {
  const auto model = opt_string(body, "model");
  if (st.opt.strict_model && model && !model->empty() && *model != st.opt.model_id) {
    throw ApiError(kStatusNotFound, "invalid_request_error",
                   "The model '" + *model + "' does not exist; this server serves '" + st.opt.model_id + "'", "model",
                   "model_not_found");
  }
}

runtime::PromptText render_chat_prompt(ServerState& st, const Request& req, const Json& messages, const Json& tools) {
  try {
    return st.chat.render_prompt(messages, tools, /*add_generation_prompt=*/true, st.guard, template_limits(st, req));
  } catch (const chat::TemplateLimitError& e) {
    throw bad_request(std::string("the chat template exceeded a limit rendering the messages: ") + e.what(), "messages",
                      "template_limit");
  }
}

std::vector<int32_t> chat_prompt_tokens(ServerState& st, const runtime::PromptText& prompt) {
  const tokenizer::Tokenizer& tok = st.engine.tokenizer();
  // Templates that write the BOS themselves must not get a second one.
  const std::string& bos = st.chat.bos_text();
  const bool has_bos = !bos.empty() && prompt.text.compare(0, bos.size(), bos) == 0 &&
                       !prompt.touches_literal(0, bos.size());
  std::vector<int32_t> ids;
  tok.encode(prompt.text, !has_bos, /*parse_special=*/true, ids, prompt.literal);
  if (ids.empty() && tok.bos() >= 0) ids.push_back(tok.bos());
  return ids;
}

std::vector<int32_t> prompt_tokens(ServerState& st, const Json& prompt, const char* param) {
  const tokenizer::Tokenizer& tok = st.engine.tokenizer();
  if (prompt.is_string()) {
    const std::string text = prompt.get<std::string>();
    // Templates that write the BOS themselves must not get a second one.
    const std::string& bos = st.chat.bos_text();
    const bool has_bos = !bos.empty() && text.compare(0, bos.size(), bos) == 0;
    std::vector<int32_t> ids = tok.encode(text, !has_bos, /*parse_special=*/true);
    if (ids.empty() && tok.bos() >= 0) ids.push_back(tok.bos());
    return ids;
  }
  if (prompt.is_array()) {
    std::vector<int32_t> ids;
    const int64_t n_vocab = tok.n_vocab();
    for (const Json& x : prompt) {
      if (!x.is_number_integer()) {
        throw bad_request(std::string("'") + param + "' must be a string or an array of token ids", param);
      }
      const int64_t id = x.is_number_unsigned() && x.get<uint64_t>() > static_cast<uint64_t>(n_vocab)
                             ? n_vocab
                             : x.get<int64_t>();
      if (id < 0 || id >= n_vocab) {
        throw bad_request("token id " + x.dump() + " is outside the vocabulary [0, " + std::to_string(n_vocab - 1) + "]",
                          param);
      }
      ids.push_back(static_cast<int32_t>(id));
    }
    return ids;
  }
  throw bad_request(std::string("'") + param + "' must be a string or an array of token ids", param);
}

}  // namespace ferrite::server
