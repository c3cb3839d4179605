// Route registration, one function per group of endpoints, and the wrapper
// that turns a JSON handler into a route with OpenAI-shaped errors.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/generation.h"
#include "server/http/message.h"
#include "runtime/prompt_text.h"
#include "server/server_state.h"

namespace ferrite::server {

using http::Request;
using http::Response;
using http::StreamSink;

using Handler = std::function<void(const Request&, Response&)>;

struct Route {
  std::string method;
  std::string path;          // exact, or a prefix when it ends with '/' ("/" alone is exact)
  Handler handler;
  bool json_body = false;    // POST with a JSON object body (Content-Type application/json)
  bool runs_inline = false;  // cheap and non-blocking: answered on the I/O thread
  bool is_public = false;    // served without the API key (the web UI's files)
};

class Routes {
 public:
  void add(Route r) { routes_.push_back(std::move(r)); }
  void get(const std::string& path, Handler h, bool inline_route = false) {
    add({"GET", path, std::move(h), false, inline_route});
  }
  void post(const std::string& path, Handler h) { add({"POST", path, std::move(h), true, false}); }

  // The route for method and path; nullptr when none. `path_known` tells
  // whether some route has the path (405 rather than 404).
  const Route* find(const std::string& method, const std::string& path, bool* path_known = nullptr) const;

 private:
  std::vector<Route> routes_;
};

// fn(request body (null without parse_body), request, response). Errors
// thrown become OpenAI error bodies with their status.
using JsonRoute = std::function<void(const Json& body, const Request&, Response&)>;
Handler json_route(ServerState& st, bool parse_body, JsonRoute fn);

void set_json(Response& res, const Json& body, int status = 200);
void set_error(ServerState& st, Response& res, int status, const std::string& type, const std::string& message,
               const std::string& param = {}, const std::string& code = {});

void add_chat_routes(Routes& routes, ServerState& st);        // routes_chat.cpp
void add_completion_routes(Routes& routes, ServerState& st);  // routes_completions.cpp
void add_native_routes(Routes& routes, ServerState& st);      // routes_native.cpp
void add_info_routes(Routes& routes, ServerState& st);        // routes_info.cpp
void add_embedding_routes(Routes& routes, ServerState& st);   // routes_embeddings.cpp
void add_rerank_routes(Routes& routes, ServerState& st);      // routes_rerank.cpp
void add_slot_routes(Routes& routes, ServerState& st);        // routes_slots.cpp
void add_webui_routes(Routes& routes, ServerState& st);       // routes_webui.cpp (unless --no-webui)

// Whether an If-None-Match header names `etag` (quoted; a weak W/ tag or *
// matches too).
bool etag_matches(std::string_view if_none_match, std::string_view etag);
void add_lora_routes(Routes& routes, ServerState& st);        // routes_lora.cpp

// A request body as JSON (any value), nesting limited; 400 when it is not JSON.
Json parse_request_json(const std::string& text);
// A `lora` field [{id, scale}, ...] as one scale per adapter (those not
// listed: 0); 400 naming `param` for a bad shape or id (routes_lora.cpp).
std::vector<float> parse_lora_field(const Json& v, size_t n_adapters, const char* param);

// The tokens of a prompt given as text (BOS as the model wants, special
// tokens parsed) or as ids (checked against the vocabulary).
std::vector<int32_t> prompt_tokens(ServerState& st, const Json& prompt, const char* param);
// The tokens of a rendered chat prompt: special tokens are parsed only in
// the template's own text, never in what came from the messages.
std::vector<int32_t> chat_prompt_tokens(ServerState& st, const runtime::PromptText& prompt);
// The messages (and tools: null for none) through the chat template with a
// generation prompt, guarded (runtime::ChatFormatter::render_prompt) and
// under the request's template limits: 400 for bad messages,
// "template_limit" when the template goes past a limit.
runtime::PromptText render_chat_prompt(ServerState& st, const Request& req, const Json& messages, const Json& tools);

// The server's template and schema limits for one request, with its
// client's flag: a render or conversion stops when the client goes.
chat::Limits template_limits(const ServerState& st, const Request& req);
grammar::SchemaLimits schema_limits(const ServerState& st, const Request& req);

// The error of a final error or cancelled event: 400 when the request's own
// grammar failed while generating (ErrorKind::BadRequest), 500 for the
// server's failures, 503 when cancelled.
ApiError event_error(const Event& ev);
// collect() (generation.h) with the request's own failures answered 400.
Completion collect_result(Task& task);

// 404 when `model` names another model and --strict-model is on; any name
// is accepted otherwise (one model is served).
void check_model_name(const ServerState& st, const Json& body);

}  // namespace ferrite::server
