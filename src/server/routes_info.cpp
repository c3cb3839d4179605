// GET /health, /v1/models, /slots, /props, /metrics and POST /v1/embeddings.
#include <cmath>
#include <cstring>

#include "server/api_error.h"
#include "server/generation.h"
#include "server/metrics.h"
#include "server/request_params.h"
#include "server/routes.h"

namespace ferrite::server {
namespace {

std::string base64(const uint8_t* data, size_t n) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t b0 = data[i], b1 = i + 1 < n ? data[i + 1] : 0, b2 = i + 2 < n ? data[i + 2] : 0;
    const uint32_t v = (b0 << 16) | (b1 << 8) | b2;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[v & 63] : '=';
  }
  return out;
}

// OpenAI's embeddings have Euclidean length 1 (a zero vector stays zero).
void normalize(std::vector<float>& v) {
  double sum = 0.0;
  for (float x : v) sum += static_cast<double>(x) * x;
  if (sum <= 0.0) return;
  const float inv = static_cast<float>(1.0 / std::sqrt(sum));
  for (float& x : v) x *= inv;
}

Json slot_json(const SlotInfo& s) {
  return {{"id", s.id},
          {"state", slot_state_name(s.state)},
          {"is_processing", s.state != SlotState::Idle},
          {"n_ctx", s.n_ctx},
          {"n_cached", s.n_cached},
          {"n_served", s.n_served},
          {"n_prompt", s.last.n_prompt},
          {"n_prompt_cached", s.last.n_cached},
          {"n_decoded", s.last.n_generated}};
}

void embeddings(ServerState& st, const Json& body, const httplib::Request& req, httplib::Response& res) {
  check_model(body, st.opt.model_id);
  if (!st.engine.is_encoder()) {
    throw bad_request("this model (" + st.opt.model_id + ") is a text generator and produces no embeddings; "
                      "serve an embedding model (an encoder such as BERT)", "model", "embeddings_not_supported");
  }
  if (!body.contains("input")) throw bad_request("'input' is required", "input");
  const std::string format = opt_string(body, "encoding_format").value_or("float");
  if (format != "float" && format != "base64") throw bad_request("'encoding_format' must be float or base64", "encoding_format");
  const Json& input = body["input"];
  std::vector<Json> inputs;
  if (input.is_string() || (input.is_array() && !input.empty() && input[0].is_number_integer())) {
    inputs.push_back(input);
  } else if (input.is_array() && !input.empty()) {
    for (const Json& x : input) inputs.push_back(x);
  } else {
    throw bad_request("'input' must be a string, an array of strings or token ids", "input");
  }
  std::vector<GenerationParams> params;
  for (const Json& x : inputs) {
    GenerationParams g;
    g.embedding = true;
    g.prompt = prompt_tokens(st, x, "input");
    if (static_cast<int64_t>(g.prompt.size()) > st.engine.n_ctx()) {
      throw bad_request("input of " + std::to_string(g.prompt.size()) + " tokens exceeds the context size " +
                        std::to_string(st.engine.n_ctx()), "input", "context_length_exceeded");
    }
    params.push_back(std::move(g));
  }
  auto tasks = submit_tasks(st.engine, std::move(params));
  auto guard = watch_client(st, req.local_port, req.remote_port, tasks);
  Json data = Json::array();
  int64_t n_tokens = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    Completion r = collect(*tasks[i]);
    n_tokens += r.timings.n_prompt;
    normalize(r.embedding);
    Json e = {{"object", "embedding"}, {"index", i}};
    if (format == "base64") {
      e["embedding"] = base64(reinterpret_cast<const uint8_t*>(r.embedding.data()), r.embedding.size() * sizeof(float));
    } else {
      e["embedding"] = r.embedding;
    }
    data.push_back(e);
  }
  current_record().prompt_tokens = n_tokens;
  set_json(res, {{"object", "list"}, {"data", data}, {"model", st.opt.model_id},
                 {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}});
}

}  // namespace

void add_info_routes(httplib::Server& http, ServerState& st) {
  http.Get("/health", [&st](const httplib::Request&, httplib::Response& res) {
    const EngineStats s = st.engine.stats();
    set_json(res, {{"status", "ok"}, {"slots_idle", st.engine.n_parallel() - s.active}, {"slots_processing", s.active}});
  });
  auto models = json_route(st, false, [&st](const Json&, const httplib::Request&, httplib::Response& res) {
    const model::HParams& hp = st.engine.model().hparams();
    Json m = {{"id", st.opt.model_id}, {"object", "model"}, {"created", unix_time()}, {"owned_by", "ferrite"},
              {"meta", {{"n_ctx_train", hp.n_ctx_train}, {"n_vocab", hp.n_vocab}, {"n_embd", hp.n_embd}}}};
    set_json(res, {{"object", "list"}, {"data", Json::array({m})}});
  });
  http.Get("/v1/models", models);
  http.Get("/models", models);
  http.Get("/slots", json_route(st, false, [&st](const Json&, const httplib::Request&, httplib::Response& res) {
    Json out = Json::array();
    for (const SlotInfo& s : st.engine.slots()) out.push_back(slot_json(s));
    set_json(res, out);
  }));
  http.Get("/props", json_route(st, false, [&st](const Json&, const httplib::Request&, httplib::Response& res) {
    set_json(res, {{"model_path", st.opt.model_path},
                   {"model", st.opt.model_id},
                   {"total_slots", st.engine.n_parallel()},
                   {"n_ctx", st.engine.n_ctx()},
                   {"n_ctx_slot", st.engine.slot_ctx()},
                   {"chat_template", st.chat.source()},
                   {"chat_template_origin", st.chat.origin()},
                   {"default_generation_settings", {{"n_ctx", st.engine.slot_ctx()}}},
                   {"build_info", "ferrite"}});
  }));
  http.Get("/metrics", [&st](const httplib::Request&, httplib::Response& res) {
    res.set_content(render_metrics(st), "text/plain; version=0.0.4");
  });
  auto embed = json_route(st, true, [&st](const Json& body, const httplib::Request& req, httplib::Response& res) {
    embeddings(st, body, req, res);
  });
  http.Post("/v1/embeddings", embed);
  http.Post("/embeddings", embed);
}

}  // namespace ferrite::server
