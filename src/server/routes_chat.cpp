// POST /v1/chat/completions: messages through the chat template, optional
// tools (calls parsed from the reply), streamed or whole.
#include "server/api_error.h"
#include "server/generation.h"
#include "server/request_params.h"
#include "server/routes.h"
#include "server/sse.h"
#include "server/tool_choice.h"

namespace ferrite::server {
namespace {

struct ChatRequest {
  RequestOptions ro;
  Json tools;               // null: none offered (or tool_choice none)
  std::string id;
  int64_t created = 0;
};

Json tool_calls_json(const std::vector<chat::ToolCall>& calls) {
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    out.push_back({{"index", i},
                   {"id", new_id("call_")},
                   {"type", "function"},
                   {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}});
  }
  return out;
}

ChatRequest parse_chat(ServerState& st, const Json& body, const Request& req) {
  check_model_name(st, body);
  if (st.engine.is_encoder()) throw bad_request("this model is an encoder: it serves /v1/embeddings only", "model");
  if (!body.contains("messages")) throw bad_request("'messages' is required", "messages");
  ChatRequest c;
  c.tools = parse_tools(body);
  const ToolChoice choice = parse_tool_choice(body, c.tools);
  if (choice.none) c.tools = nullptr;
  c.ro = parse_generation_fields(body, st.engine, /*chat=*/true, schema_limits(st, req));
  c.ro.gen.parse_tool_calls = !c.tools.is_null();  // the generation step parses the reply's calls
  // A forced call is generated under its grammar (it takes the place of any response_format).
  if (choice.forced) {
    try {
      c.ro.gen.grammar = forced_call_gbnf(c.tools, choice.function, schema_limits(st, req));
    } catch (const InvalidArgument& e) {
      throw bad_request(std::string("a tool's 'parameters' schema cannot constrain a forced call: ") + e.what(), "tools");
    }
  }
  c.ro.gen.prompt = chat_prompt_tokens(st, render_chat_prompt(st, req, body["messages"], c.tools));
  check_budget(c.ro.gen, c.ro.max_tokens_given, st.engine, "messages");
  c.id = new_id("chatcmpl-");
  c.created = unix_time();
  return c;
}

Json chunk(const ServerState& st, const ChatRequest& c, size_t index, Json delta, const char* finish) {
  Json choice = {{"index", index}, {"delta", std::move(delta)}, {"logprobs", nullptr}};
  choice["finish_reason"] = finish ? Json(finish) : Json(nullptr);
  Json j = {{"id", c.id}, {"object", "chat.completion.chunk"}, {"created", c.created},
            {"model", st.opt.model_id}, {"system_fingerprint", "ferrite"}, {"choices", Json::array({choice})}};
  if (c.ro.include_usage) j["usage"] = nullptr;
  return j;
}

void respond_whole(ServerState& st, const ChatRequest& c, const std::vector<std::shared_ptr<Task>>& tasks,
                   const Request& req, Response& res) {
  auto guard = watch_client(st, req.client, tasks);
  Json choices = Json::array();
  int64_t completion = 0, prompt = 0, cached = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    Completion r = collect_result(*tasks[i]);
    Json message = {{"role", "assistant"}};
    std::string finish = finish_reason_name(r.finish);
    const chat::ParsedReply parsed = r.reply ? *r.reply : chat::ParsedReply{r.text, {}};
    if (!parsed.calls.empty()) {
      message["content"] = parsed.content.empty() ? Json(nullptr) : Json(parsed.content);
      message["tool_calls"] = tool_calls_json(parsed.calls);
      finish = "tool_calls";
    } else {
      message["content"] = r.text;
    }
    Json choice = {{"index", i}, {"message", message}};
    choice["logprobs"] = c.ro.logprobs ? chat_logprobs(r.tokens, st.engine.tokenizer()) : Json(nullptr);
    choice["finish_reason"] = finish;
    choices.push_back(choice);
    completion += r.timings.n_generated;
    prompt = r.timings.n_prompt;
    cached = std::max<int64_t>(cached, r.timings.n_cached);
  }
  current_record().prompt_tokens = prompt;
  current_record().completion_tokens = completion;
  set_json(res, {{"id", c.id}, {"object", "chat.completion"}, {"created", c.created}, {"model", st.opt.model_id},
                 {"system_fingerprint", "ferrite"}, {"choices", choices}, {"usage", usage_json(prompt, completion, cached)}});
}

// Streams every choice in turn (events of the others wait in their tasks).
bool stream_all(ServerState& st, const ChatRequest& c, const std::vector<std::shared_ptr<Task>>& tasks,
                StreamSink& sink) {
  int64_t completion = 0, prompt = 0, cached = 0;
  const bool tools = !c.tools.is_null();
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!sse_send(sink, chunk(st, c, i, {{"role", "assistant"}, {"content", ""}}, nullptr))) return false;
    std::string held;  // with tools the reply is parsed whole before it is sent
    Event ev;
    bool ended = false;
    while (tasks[i]->next(ev)) {
      if (ev.final && (ev.finish == FinishReason::Error || ev.finish == FinishReason::Cancelled)) {
        sse_send(sink, error_body(event_error(ev)));
        return false;
      }
      if (tools) {
        held += ev.text;
      } else if (!ev.text.empty() || !ev.tokens.empty()) {
        Json j = chunk(st, c, i, {{"content", ev.text}}, nullptr);
        if (c.ro.logprobs) j["choices"][0]["logprobs"] = chat_logprobs(ev.tokens, st.engine.tokenizer());
        if (!sse_send(sink, j)) return false;
      }
      if (!ev.final) continue;
      std::string finish = finish_reason_name(ev.finish);
      if (tools) {
        const chat::ParsedReply parsed = ev.reply ? *ev.reply : chat::ParsedReply{held, {}};
        Json delta = parsed.calls.empty() ? Json{{"content", held}} : Json{{"tool_calls", tool_calls_json(parsed.calls)}};
        if (!parsed.calls.empty()) finish = "tool_calls";
        if (!sse_send(sink, chunk(st, c, i, delta, nullptr))) return false;
      }
      // The last chunk of a choice carries its timings, as llama-server's does.
      Json last = chunk(st, c, i, Json::object(), finish.c_str());
      last["timings"] = timings_json(ev.timings);
      if (!sse_send(sink, last)) return false;
      completion += ev.timings.n_generated;
      prompt = ev.timings.n_prompt;
      cached = std::max<int64_t>(cached, ev.timings.n_cached);
      ended = true;
      break;
    }
    if (!ended) return false;
  }
  current_record().prompt_tokens = prompt;
  current_record().completion_tokens = completion;
  if (c.ro.include_usage) {
    Json j = {{"id", c.id}, {"object", "chat.completion.chunk"}, {"created", c.created}, {"model", st.opt.model_id},
              {"system_fingerprint", "ferrite"}, {"choices", Json::array()}, {"usage", usage_json(prompt, completion, cached)}};
    if (!sse_send(sink, j)) return false;
  }
  return sse_done(sink);
}

}  // namespace

void add_chat_routes(Routes& routes, ServerState& st) {
  auto handler = json_route(st, true, [&st](const Json& body, const Request& req, Response& res) {
    ChatRequest c = parse_chat(st, body, req);
    auto tasks = submit_tasks(st.engine, replicate(c.ro.gen, c.ro.n));
    if (!c.ro.stream) {
      respond_whole(st, c, tasks, req, res);
      return;
    }
    current_record().streamed = true;
    res.set_header("Cache-Control", "no-cache");
    res.content_type = "text/event-stream";
    res.stream = [&st, c, hold = hold_tasks(st, req.client, tasks)](StreamSink& sink) {
      stream_all(st, c, hold->tasks, sink);
    };
  });
  routes.post("/v1/chat/completions", handler);
  routes.post("/chat/completions", handler);
}

}  // namespace ferrite::server
