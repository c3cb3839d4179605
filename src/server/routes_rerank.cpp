// POST /rerank, /reranking, /v1/rerank, /v1/reranking: relevance scores of
// documents for a query from a reranker (a model whose file says pooling rank
// and holds a classification head; Engine::is_reranker), as llama-server
// c392e50 answers them:
// - each document is one pair (tokenizer/rank_pair.h): BOS query EOS SEP
//   document EOS as llama-server builds it, or for WordPiece (bert)
//   vocabularies BERT's [CLS] query [SEP] document [SEP] with the document
//   as token type 1 (a BERT cross-encoder's segment ids); its score the
//   head's output on the pair's first token;
// - Jina's shape {model, object, usage, results: [{index, relevance_score}]},
//   or TEI's [{index, score (, text with return_text)}] when the request gives
//   `texts` instead of `documents`;
// - results in the order of the documents (c392e50 neither sorts them nor
//   applies top_n, which is checked and otherwise ignored here too).
// Other models: 501 rerank_not_supported.
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/generation.h"
#include "server/request_params.h"
#include "server/routes.h"
#include "tokenizer/rank_pair.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::server {
namespace {

constexpr size_t kMaxDocuments = 2048;

struct RerankRequest {
  std::string query;
  std::vector<std::string> documents;
  bool tei = false;  // `texts` given: TEI's answer
};

RerankRequest parse(const Json& body) {
  RerankRequest r;
  const auto query = opt_string(body, "query");
  if (!query) throw bad_request("'query' is required (a string)", "query");
  r.query = *query;
  r.tei = body.contains("texts") && !body.contains("documents");
  const char* key = r.tei ? "texts" : "documents";
  if (!body.contains(key) || !body[key].is_array() || body[key].empty()) {
    throw bad_request(std::string("'") + key + "' must be a non-empty array of strings", key);
  }
  if (body[key].size() > kMaxDocuments) {
    throw bad_request("at most " + std::to_string(kMaxDocuments) + " documents per request", key);
  }
  for (const Json& d : body[key]) {
    if (!d.is_string()) throw bad_request(std::string("'") + key + "' must be a non-empty array of strings", key);
    r.documents.push_back(d.get<std::string>());
  }
  (void)opt_integer(body, "top_n", 1, static_cast<int64_t>(kMaxDocuments));
  return r;
}

void rerank(ServerState& st, const Json& body, const Request& req, Response& res) {
  check_model_name(st, body);
  const RerankRequest r = parse(body);
  if (!st.engine.is_reranker()) {
    throw ApiError(kStatusNotImplemented, "not_supported_error",
                   "this model (" + st.opt.model_id + ", architecture " + st.engine.model().hparams().arch +
                       ") is not a reranker: reranking needs a model whose file says pooling_type 4 (rank) and "
                       "holds a classification head (bert or jina-bert-v2 rerankers)",
                   "model", "rerank_not_supported");
  }
  const tokenizer::Tokenizer& tok = st.engine.tokenizer();
  const tokenizer::Vocab& v = tok.vocab();
  if (tokenizer::rank_pair_layout(v) == tokenizer::PairLayout::None) {
    throw ApiError(kStatusNotImplemented, "not_supported_error", tokenizer::rank_pair_missing(v), "model",
                   "rerank_not_supported");
  }
  const int64_t n_types = st.engine.model().hparams().n_token_types;
  const std::vector<int32_t> query = tok.encode(r.query, /*add_special=*/false, /*parse_special=*/true);
  std::vector<GenerationParams> params;
  for (const std::string& d : r.documents) {
    GenerationParams g;
    g.embedding = true;
    tokenizer::RankPair pair = tokenizer::rank_pair(tok, query, d, n_types);
    g.prompt = std::move(pair.tokens);
    g.token_types = std::move(pair.types);
    if (static_cast<int64_t>(g.prompt.size()) > st.engine.embedding_n_ctx()) {
      throw bad_request("query and document of " + std::to_string(g.prompt.size()) +
                            " tokens exceed the context size " + std::to_string(st.engine.embedding_n_ctx()),
                        r.tei ? "texts" : "documents", "context_length_exceeded");
    }
    params.push_back(std::move(g));
  }
  Json results = Json::array();
  int64_t n_tokens = 0;
  // One at a time, as the embeddings: the engine runs them in turn anyway.
  for (size_t i = 0; i < params.size(); ++i) {
    auto tasks = submit_tasks(st.engine, {std::move(params[i])});
    auto guard = watch_client(st, req.client, tasks);
    const Completion c = collect_result(*tasks[0]);
    if (c.embedding.size() != 1) throw ApiError(kStatusInternal, "server_error", "the reranker gave no score");
    n_tokens += c.timings.n_prompt;
    if (r.tei) {
      Json e = {{"index", i}, {"score", c.embedding[0]}};
      if (opt_bool(body, "return_text").value_or(false)) e["text"] = r.documents[i];
      results.push_back(std::move(e));
    } else {
      results.push_back({{"index", i}, {"relevance_score", c.embedding[0]}});
    }
  }
  current_record().prompt_tokens = n_tokens;
  if (r.tei) {
    set_json(res, results);
    return;
  }
  set_json(res, {{"model", st.opt.model_id}, {"object", "list"},
                 {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}, {"results", results}});
}

}  // namespace

void add_rerank_routes(Routes& routes, ServerState& st) {
  auto rank = json_route(st, true, [&st](const Json& body, const Request& req, Response& res) {
    rerank(st, body, req, res);
  });
  for (const char* path : {"/rerank", "/reranking", "/v1/rerank", "/v1/reranking"}) routes.post(path, rank);
}

}  // namespace ferrite::server
