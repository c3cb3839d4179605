// llama.cpp-style native endpoints: /completion, /tokenize, /detokenize,
// /apply-template.
#include "server/api_error.h"
#include "server/generation.h"
#include "server/request_params.h"
#include "server/routes.h"
#include "server/sse.h"

namespace ferrite::server {
namespace {

Json timings_json(const Timings& t) {
  return {{"prompt_n", t.n_prompt - t.n_cached}, {"cache_n", t.n_cached}, {"prompt_ms", t.prompt_ms},
          {"predicted_n", t.n_generated}, {"predicted_ms", t.generation_ms}};
}

Json final_json(const ServerState& st, const std::string& content, const Event& ev) {
  const char* stop_type = ev.finish == FinishReason::Length ? "limit" : (ev.stop_word.empty() ? "eos" : "word");
  return {{"content", content},           {"stop", true},
          {"model", st.opt.model_id},     {"tokens_predicted", ev.timings.n_generated},
          {"tokens_evaluated", ev.timings.n_prompt},
          {"tokens_cached", ev.timings.n_cached},
          {"stop_type", stop_type},       {"stopping_word", ev.stop_word},
          {"id_slot", ev.slot},           {"timings", timings_json(ev.timings)}};
}

void completion(ServerState& st, const Json& body, const httplib::Request& req, httplib::Response& res) {
  if (st.engine.is_encoder()) throw bad_request("this model is an encoder: it serves /v1/embeddings only");
  if (!body.contains("prompt")) throw bad_request("'prompt' is required", "prompt");
  RequestOptions ro = parse_generation_fields(body, st.engine, /*chat=*/false);
  ro.gen.prompt = prompt_tokens(st, body["prompt"], "prompt");
  check_budget(ro.gen, ro.max_tokens_given, st.engine);
  auto tasks = submit_tasks(st.engine, {ro.gen});
  if (ro.stream) {
    current_record().streamed = true;
    const int local = req.local_port, remote = req.remote_port;
    res.set_chunked_content_provider(
        "text/event-stream",
        [&st, tasks, local, remote](size_t, httplib::DataSink& sink) {
          auto guard = watch_client(st, local, remote, tasks);
          Event ev;
          while (tasks[0]->next(ev)) {
            if (ev.final && (ev.finish == FinishReason::Error || ev.finish == FinishReason::Cancelled)) {
              try {
                throw_for(ev);
              } catch (const ApiError& e) {
                sse_send(sink, error_body(e));
              }
              break;
            }
            Json j = ev.final ? final_json(st, ev.text, ev) : Json{{"content", ev.text}, {"stop", false}};
            if (!sse_send(sink, j)) break;
            if (ev.final) {
              current_record().prompt_tokens = ev.timings.n_prompt;
              current_record().completion_tokens = ev.timings.n_generated;
              sink.done();
              return true;
            }
          }
          cancel_all(tasks);
          return false;
        },
        [tasks](bool) { cancel_all(tasks); });
    return;
  }
  auto guard = watch_client(st, req.local_port, req.remote_port, tasks);
  Completion r = collect(*tasks[0]);
  Event ev;
  ev.finish = r.finish;
  ev.stop_word = r.stop_word;
  ev.timings = r.timings;
  ev.slot = r.slot;
  current_record().prompt_tokens = r.timings.n_prompt;
  current_record().completion_tokens = r.timings.n_generated;
  set_json(res, final_json(st, r.text, ev));
}

}  // namespace

void add_native_routes(httplib::Server& http, ServerState& st) {
  http.Post("/completion", json_route(st, true, [&st](const Json& body, const httplib::Request& req,
                                                      httplib::Response& res) { completion(st, body, req, res); }));

  http.Post("/tokenize", json_route(st, true, [&st](const Json& body, const httplib::Request&, httplib::Response& res) {
    const std::string content = opt_string(body, "content").value_or("");
    const bool add_special = opt_bool(body, "add_special").value_or(false);
    const bool with_pieces = opt_bool(body, "with_pieces").value_or(false);
    const tokenizer::Tokenizer& tok = st.engine.tokenizer();
    const std::vector<int32_t> ids = tok.encode(content, add_special, /*parse_special=*/true);
    Json tokens = Json::array();
    for (int32_t id : ids) {
      if (with_pieces) {
        tokens.push_back({{"id", id}, {"piece", tok.token_to_piece(id, true)}});
      } else {
        tokens.push_back(id);
      }
    }
    set_json(res, {{"tokens", tokens}});
  }));

  http.Post("/detokenize", json_route(st, true, [&st](const Json& body, const httplib::Request&, httplib::Response& res) {
    const Json tokens = body.contains("tokens") ? body["tokens"] : Json::array();
    if (!tokens.is_array()) throw bad_request("'tokens' must be an array of token ids", "tokens");
    std::vector<int32_t> ids = tokens.empty() ? std::vector<int32_t>{} : prompt_tokens(st, tokens, "tokens");
    set_json(res, {{"content", st.engine.tokenizer().decode(ids)}});
  }));

  http.Post("/apply-template", json_route(st, true, [&st](const Json& body, const httplib::Request&, httplib::Response& res) {
    if (!body.contains("messages")) throw bad_request("'messages' is required", "messages");
    const Json tools = body.contains("tools") ? body["tools"] : Json(nullptr);
    set_json(res, {{"prompt", st.chat.render(body["messages"], tools, true)}});
  }));
}

}  // namespace ferrite::server
