// POST /v1/completions: a prompt (text, texts, token ids or lists of them),
// n choices per prompt, echo, streamed or whole.
#include "server/api_error.h"
#include "server/generation.h"
#include "server/request_params.h"
#include "server/routes.h"
#include "server/sse.h"

namespace ferrite::server {
namespace {

struct CompletionRequest {
  RequestOptions ro;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> echo_texts;  // per prompt; empty without echo
  std::string id;
  int64_t created = 0;
};

// Lists of prompts: "text", ["a", "b"], [1, 2, 3], [[1, 2], [3]].
std::vector<Json> split_prompts(const Json& prompt) {
  if (prompt.is_string()) return {prompt};
  if (!prompt.is_array() || prompt.empty()) {
    throw bad_request("'prompt' must be a string, an array of strings, or token ids", "prompt");
  }
  if (prompt[0].is_number_integer()) return {prompt};
  std::vector<Json> out;
  for (const Json& p : prompt) {
    if (!p.is_string() && !p.is_array()) throw bad_request("'prompt' items must be strings or token id arrays", "prompt");
    out.push_back(p);
  }
  return out;
}

CompletionRequest parse_completion(ServerState& st, const Json& body, const Request& req) {
  check_model_name(st, body);
  if (st.engine.is_encoder()) throw bad_request("this model is an encoder: it serves /v1/embeddings only", "model");
  if (!body.contains("prompt")) throw bad_request("'prompt' is required", "prompt");
  if (auto s = opt_string(body, "suffix"); s && !s->empty()) {
    throw bad_request("'suffix' (fill-in-the-middle) is not supported by this server", "suffix");
  }
  CompletionRequest c;
  c.ro = parse_generation_fields(body, st.engine, /*chat=*/false, schema_limits(st, req));
  const bool echo = opt_bool(body, "echo").value_or(false);
  const std::vector<Json> prompts = split_prompts(body["prompt"]);
  if (prompts.size() * static_cast<size_t>(c.ro.n) > static_cast<size_t>(kMaxChoices)) {
    throw bad_request("at most " + std::to_string(kMaxChoices) + " choices (prompts x n) per request", "n");
  }
  for (const Json& p : prompts) {
    std::vector<int32_t> ids = prompt_tokens(st, p, "prompt");
    GenerationParams g = c.ro.gen;
    g.prompt = ids;
    check_budget(g, c.ro.max_tokens_given, st.engine);
    if (echo) c.echo_texts.push_back(p.is_string() ? p.get<std::string>() : st.engine.tokenizer().decode(ids));
    c.prompts.push_back(std::move(ids));
  }
  c.id = new_id("cmpl-");
  c.created = unix_time();
  return c;
}

std::vector<GenerationParams> task_params(const CompletionRequest& c) {
  std::vector<GenerationParams> out;
  for (const auto& p : c.prompts) {
    GenerationParams g = c.ro.gen;
    g.prompt = p;
    for (GenerationParams& r : replicate(g, c.ro.n)) out.push_back(std::move(r));
  }
  return out;
}

Json envelope(const ServerState& st, const CompletionRequest& c, Json choices) {
  return {{"id", c.id}, {"object", "text_completion"}, {"created", c.created}, {"model", st.opt.model_id},
          {"system_fingerprint", "ferrite"}, {"choices", std::move(choices)}};
}

const std::string& echo_of(const CompletionRequest& c, size_t task) {
  static const std::string kNone;
  if (c.echo_texts.empty()) return kNone;
  return c.echo_texts[task / static_cast<size_t>(c.ro.n)];
}

bool stream_all(ServerState& st, const CompletionRequest& c, const std::vector<std::shared_ptr<Task>>& tasks,
                StreamSink& sink) {
  int64_t completion = 0, prompt = 0, cached = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string& echo = echo_of(c, i);
    if (!echo.empty()) {
      Json ch = {{"index", i}, {"text", echo}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
      if (!sse_send(sink, envelope(st, c, Json::array({ch})))) return false;
    }
    Event ev;
    bool ended = false;
    while (tasks[i]->next(ev)) {
      if (ev.final && (ev.finish == FinishReason::Error || ev.finish == FinishReason::Cancelled)) {
        sse_send(sink, error_body(event_error(ev)));
        return false;
      }
      Json ch = {{"index", i}, {"text", ev.text}};
      ch["logprobs"] = c.ro.logprobs ? completion_logprobs(ev.tokens, st.engine.tokenizer(), 0) : Json(nullptr);
      ch["finish_reason"] = ev.final ? Json(finish_reason_name(ev.finish)) : Json(nullptr);
      if (!sse_send(sink, envelope(st, c, Json::array({ch})))) return false;
      if (ev.final) {
        completion += ev.timings.n_generated;
        prompt += ev.timings.n_prompt;
        cached += ev.timings.n_cached;
        ended = true;
        break;
      }
    }
    if (!ended) return false;
  }
  current_record().prompt_tokens = prompt;
  current_record().completion_tokens = completion;
  if (c.ro.include_usage) {
    Json j = envelope(st, c, Json::array());
    j["usage"] = usage_json(prompt, completion, cached);
    if (!sse_send(sink, j)) return false;
  }
  return sse_done(sink);
}

}  // namespace

void add_completion_routes(Routes& routes, ServerState& st) {
  auto handler = json_route(st, true, [&st](const Json& body, const Request& req, Response& res) {
    CompletionRequest c = parse_completion(st, body, req);
    auto tasks = submit_tasks(st.engine, task_params(c));
    if (c.ro.stream) {
      current_record().streamed = true;
      res.content_type = "text/event-stream";
      res.stream = [&st, c, hold = hold_tasks(st, req.client, tasks)](StreamSink& sink) {
        stream_all(st, c, hold->tasks, sink);
      };
      return;
    }
    auto guard = watch_client(st, req.client, tasks);
    Json choices = Json::array();
    int64_t completion = 0, prompt = 0, cached = 0;
    for (size_t i = 0; i < tasks.size(); ++i) {
      Completion r = collect_result(*tasks[i]);
      const std::string& echo = echo_of(c, i);
      Json ch = {{"index", i}, {"text", echo + r.text}};
      ch["logprobs"] = c.ro.logprobs ? completion_logprobs(r.tokens, st.engine.tokenizer(), echo.size()) : Json(nullptr);
      ch["finish_reason"] = finish_reason_name(r.finish);
      choices.push_back(ch);
      completion += r.timings.n_generated;
      if (i % static_cast<size_t>(c.ro.n) == 0) {
        prompt += r.timings.n_prompt;
        cached += r.timings.n_cached;
      }
    }
    current_record().prompt_tokens = prompt;
    current_record().completion_tokens = completion;
    Json j = envelope(st, c, choices);
    j["usage"] = usage_json(prompt, completion, cached);
    set_json(res, j);
  });
  routes.post("/v1/completions", handler);
  routes.post("/completions", handler);
}

}  // namespace ferrite::server
