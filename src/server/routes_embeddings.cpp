// POST /v1/embeddings: encoders (bert), and decoders when the server runs
// with --embeddings (their final hidden states, pooled). Rerankers are
// refused (routes_rerank.cpp serves them).
#include <cmath>

#include "server/api_error.h"
#include "server/generation.h"
#include "server/request_params.h"
#include "server/routes.h"

namespace ferrite::server {
namespace {

// OpenAI's limit on inputs per request.
constexpr size_t kMaxInputs = 2048;

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

std::vector<Json> split_inputs(const Json& input) {
  std::vector<Json> inputs;
  if (input.is_string() || (input.is_array() && !input.empty() && input[0].is_number_integer())) {
    inputs.push_back(input);
  } else if (input.is_array() && !input.empty()) {
    if (input.size() > kMaxInputs) {
      throw bad_request("at most " + std::to_string(kMaxInputs) + " inputs per request", "input");
    }
    for (const Json& x : input) inputs.push_back(x);
  } else {
    throw bad_request("'input' must be a string, an array of strings or token ids", "input");
  }
  return inputs;
}

void embeddings(ServerState& st, const Json& body, const Request& req, Response& res) {
  check_model_name(st, body);
  if (st.engine.is_reranker()) {
    // llama-server c392e50 reads n_embd floats from the one score here; a
    // reranker's output is a relevance score, served by /rerank.
    throw bad_request("this model (" + st.opt.model_id + ") is a reranker: its output is one relevance score per "
                      "query and document, served by /rerank, not an embedding",
                      "model", "embeddings_not_supported");
  }
  if (!st.engine.serves_embeddings()) {
    throw bad_request("this model (" + st.opt.model_id + ") is a text generator: start the server with --embeddings "
                      "to get embeddings from its hidden states, or serve an embedding model",
                      "model", "embeddings_not_supported");
  }
  if (!body.contains("input")) throw bad_request("'input' is required", "input");
  const std::string format = opt_string(body, "encoding_format").value_or("float");
  if (format != "float" && format != "base64") throw bad_request("'encoding_format' must be float or base64", "encoding_format");
  std::vector<GenerationParams> params;
  for (const Json& x : split_inputs(body["input"])) {
    GenerationParams g;
    g.embedding = true;
    g.prompt = prompt_tokens(st, x, "input");
    if (static_cast<int64_t>(g.prompt.size()) > st.engine.embedding_n_ctx()) {
      throw bad_request("input of " + std::to_string(g.prompt.size()) + " tokens exceeds the context size " +
                            std::to_string(st.engine.embedding_n_ctx()),
                        "input", "context_length_exceeded");
    }
    params.push_back(std::move(g));
  }
  Json data = Json::array();
  int64_t n_tokens = 0;
  // One at a time: the engine runs embeddings in turn anyway, and a long
  // list would not fit the request queue.
  for (size_t i = 0; i < params.size(); ++i) {
    auto tasks = submit_tasks(st.engine, {std::move(params[i])});
    auto guard = watch_client(st, req.client, tasks);
    Completion r = collect_result(*tasks[0]);
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

void add_embedding_routes(Routes& routes, ServerState& st) {
  auto embed = json_route(st, true, [&st](const Json& body, const Request& req, Response& res) {
    embeddings(st, body, req, res);
  });
  routes.post("/v1/embeddings", embed);
  routes.post("/embeddings", embed);
}

}  // namespace ferrite::server
