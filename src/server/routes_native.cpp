// llama.cpp-style native endpoints: /completion, /infill, /tokenize,
// /detokenize, /apply-template.
#include "server/api_error.h"
#include "server/generation.h"
#include "server/request_params.h"
#include "server/routes.h"
#include "server/sse.h"

namespace ferrite::server {
namespace {

Json timings_json(const Timings& t) {
  Json j = {{"prompt_n", t.n_prompt - t.n_cached}, {"cache_n", t.n_cached}, {"prompt_ms", t.prompt_ms},
            {"predicted_n", t.n_generated}, {"predicted_ms", t.generation_ms}};
  if (t.n_drafted > 0) {  // with speculative decoding, as llama-server reports it
    j["draft_n"] = t.n_drafted;
    j["draft_n_accepted"] = t.n_draft_accepted;
  }
  return j;
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

// Generates for `ro` (prompt set) and answers as /completion does.
void respond(ServerState& st, RequestOptions& ro, const Request& req, Response& res) {
  check_budget(ro.gen, ro.max_tokens_given, st.engine);
  auto tasks = submit_tasks(st.engine, {ro.gen});
  if (ro.stream) {
    current_record().streamed = true;
    res.content_type = "text/event-stream";
    res.stream = [&st, hold = hold_tasks(st, req.client, tasks)](StreamSink& sink) {
      Event ev;
      while (hold->tasks[0]->next(ev)) {
        if (ev.final && (ev.finish == FinishReason::Error || ev.finish == FinishReason::Cancelled)) {
          sse_send(sink, error_body(event_error(ev)));
          return;
        }
        Json j = ev.final ? final_json(st, ev.text, ev) : Json{{"content", ev.text}, {"stop", false}};
        if (!sse_send(sink, j)) return;
        if (ev.final) {
          current_record().prompt_tokens = ev.timings.n_prompt;
          current_record().completion_tokens = ev.timings.n_generated;
          return;
        }
      }
    };
    return;
  }
  auto guard = watch_client(st, req.client, tasks);
  Completion r = collect_result(*tasks[0]);
  Event ev;
  ev.finish = r.finish;
  ev.stop_word = r.stop_word;
  ev.timings = r.timings;
  ev.slot = r.slot;
  current_record().prompt_tokens = r.timings.n_prompt;
  current_record().completion_tokens = r.timings.n_generated;
  set_json(res, final_json(st, r.text, ev));
}

void completion(ServerState& st, const Json& body, const Request& req, Response& res) {
  if (st.engine.is_encoder()) throw bad_request("this model is an encoder: it serves /v1/embeddings only");
  if (!body.contains("prompt")) throw bad_request("'prompt' is required", "prompt");
  RequestOptions ro = parse_generation_fields(body, st.engine, /*chat=*/false, schema_limits(st, req));
  ro.gen.prompt = prompt_tokens(st, body["prompt"], "prompt");
  respond(st, ro, req, res);
}

// /infill: input_prefix, input_suffix, optional prompt (the start of the
// middle) and input_extra [{filename, text}] (other files for context).
void infill(ServerState& st, const Json& body, const Request& req, Response& res) {
  if (st.engine.is_encoder()) throw bad_request("this model is an encoder: it serves /v1/embeddings only");
  if (!st.fim.usable()) {
    throw bad_request("this model's vocabulary has no fill-in-the-middle tokens (prefix, suffix, middle): "
                      "serve a code model trained for infilling",
                      "model", "infill_not_supported");
  }
  std::vector<FimChunk> extra;
  if (body.contains("input_extra") && !body["input_extra"].is_null()) {
    const Json& x = body["input_extra"];
    if (!x.is_array()) throw bad_request("'input_extra' must be an array of {filename, text}", "input_extra");
    for (const Json& c : x) {
      if (!c.is_object()) throw bad_request("'input_extra' items must be objects {filename, text}", "input_extra");
      extra.push_back({opt_string(c, "filename").value_or(""), opt_string(c, "text").value_or("")});
    }
  }
  RequestOptions ro = parse_generation_fields(body, st.engine, /*chat=*/false, schema_limits(st, req));
  ro.gen.prompt = fim_prompt(st.engine.tokenizer(), st.fim, opt_string(body, "input_prefix").value_or(""),
                             opt_string(body, "input_suffix").value_or(""), opt_string(body, "prompt").value_or(""),
                             extra);
  respond(st, ro, req, res);
}

// /tokenize: the ids (and pieces) of a text. The answer is bounded: with
// pieces, each token costs ~40 bytes of JSON, so a large body could ask for
// an answer ~200 times its size.
void tokenize(ServerState& st, const Json& body, Response& res) {
  const std::string content = opt_string(body, "content").value_or("");
  const bool add_special = opt_bool(body, "add_special").value_or(false);
  const bool parse_special = opt_bool(body, "parse_special").value_or(true);
  const bool with_pieces = opt_bool(body, "with_pieces").value_or(false);
  const tokenizer::Tokenizer& tok = st.engine.tokenizer();
  const std::vector<int32_t> ids = tok.encode(content, add_special, parse_special);
  const size_t limit = st.opt.max_tokenize_response_bytes;
  std::string out = "{\"tokens\":[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    if (with_pieces) {
      out += dump(Json{{"id", ids[i]}, {"piece", tok.token_to_piece(ids[i], true)}});
    } else {
      out += std::to_string(ids[i]);
    }
    if (out.size() > limit) {
      throw ApiError(kStatusPayloadTooLarge, "invalid_request_error",
                     "the answer would exceed " + std::to_string(limit) + " bytes (" + std::to_string(ids.size()) +
                         " tokens" + (with_pieces ? " with pieces" : "") + "); send less text at a time",
                     "content", "response_too_large");
    }
  }
  out += "]}";
  res.status = 200;
  res.set_content(std::move(out), "application/json");
}

}  // namespace

void add_native_routes(Routes& routes, ServerState& st) {
  routes.post("/completion", json_route(st, true, [&st](const Json& body, const Request& req, Response& res) {
    completion(st, body, req, res);
  }));

  routes.post("/infill", json_route(st, true, [&st](const Json& body, const Request& req, Response& res) {
    infill(st, body, req, res);
  }));

  routes.post("/tokenize", json_route(st, true, [&st](const Json& body, const Request&, Response& res) {
    tokenize(st, body, res);
  }));

  routes.post("/detokenize", json_route(st, true, [&st](const Json& body, const Request&, Response& res) {
    const Json tokens = body.contains("tokens") ? body["tokens"] : Json::array();
    if (!tokens.is_array()) throw bad_request("'tokens' must be an array of token ids", "tokens");
    std::vector<int32_t> ids = tokens.empty() ? std::vector<int32_t>{} : prompt_tokens(st, tokens, "tokens");
    set_json(res, {{"content", st.engine.tokenizer().decode(ids)}});
  }));

  routes.post("/apply-template", json_route(st, true, [&st](const Json& body, const Request& req, Response& res) {
    if (!body.contains("messages")) throw bad_request("'messages' is required", "messages");
    const Json tools = body.contains("tools") ? body["tools"] : Json(nullptr);
    set_json(res, {{"prompt", render_chat_prompt(st, req, body["messages"], tools).text}});
  }));
}

}  // namespace ferrite::server
