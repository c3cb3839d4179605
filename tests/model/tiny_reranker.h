// A tiny random bert reranker in llama.cpp c392e50's layout (the converter's
// BertForSequenceClassification): bert with learned positions, q/k/v and
// every bias, GELU MLP, pooling_type 4 (rank) and the classification head
// cls.weight [n_embd, n_embd] + cls.bias, cls.output.weight [n_embd, 1] +
// cls.output.bias. The vocabulary is tiny_families.h's SentencePiece-style
// one with a separator id (tokenizer.ggml.seperator_token_id, llama.cpp's
// spelling) distinct from EOS, so that the prompt llama-server builds for a
// pair, BOS query EOS SEP document EOS, shows each of its tokens. 258 is the
// byte <0xFF>, which no UTF-8 text produces.
// tests/model/golden/tiny-bert-rerank.json holds llama.cpp's scores for it
// (golden_families_test.cpp GoldenReranker says how they were made).
#pragma once

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/tiny_families.h"
#include "support/test_data.h"

namespace ferrite::test {

constexpr int32_t kTinyRerankerSep = 258;

// head = false: the same model without its head (pooling_type 4 must then be refused).
inline std::unique_ptr<TinyGguf> make_tiny_reranker(bool head = true, uint32_t pooling_type = 4) {
  namespace d = tiny_family_detail;
  auto g = std::make_unique<TinyGguf>("bert", 31301u);
  d::add_vocab(*g);
  g->writer().set("tokenizer.ggml.seperator_token_id", gguf::Value::u32(kTinyRerankerSep));
  g->writer().set("tokenizer.ggml.token_type_count", gguf::Value::u32(2));
  g->set_u32("context_length", d::kCtx);
  g->set_u32("embedding_length", d::kEmbd);
  g->set_u32("block_count", 2);
  g->set_u32("feed_forward_length", d::kFf);
  g->set_u32("attention.head_count", d::kHead);
  g->set_f32("attention.layer_norm_epsilon", 1e-12f);
  g->writer().set("bert.attention.causal", gguf::Value::boolean(false));
  g->set_u32("pooling_type", pooling_type);
  const int64_t e = d::kEmbd, ff = d::kFf;
  auto norm = [&](const std::string& name) {
    g->add_norm(name + ".weight", e);
    g->add(name + ".bias", {e}, 0.1f);
  };
  g->add("token_embd.weight", {e, d::kVocab}, 1.0f);
  g->add("token_types.weight", {e, 2}, 0.5f);
  g->add("position_embd.weight", {e, d::kCtx}, 0.5f);
  norm("token_embd_norm");
  for (int il = 0; il < 2; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    for (const char* m : {"attn_q", "attn_k", "attn_v"}) {
      g->add(p + m + ".weight", {e, e}, 2.0f / std::sqrt(static_cast<float>(e)));
      g->add(p + m + ".bias", {e}, 0.2f);
    }
    g->add_linear(p + "attn_output.weight", e, e);
    g->add(p + "attn_output.bias", {e}, 0.1f);
    norm(p + "attn_output_norm");
    g->add_linear(p + "ffn_up.weight", e, ff);
    g->add(p + "ffn_up.bias", {ff}, 0.1f);
    g->add_linear(p + "ffn_down.weight", ff, e);
    g->add(p + "ffn_down.bias", {e}, 0.1f);
    norm(p + "layer_output_norm");
  }
  if (head) {
    // Pre-tanh values of order one; scores of order one, apart by far more than the tolerance.
    g->add_linear("cls.weight", e, e);
    g->add("cls.bias", {e}, 0.2f);
    g->add("cls.output.weight", {e, 1}, 4.0f / std::sqrt(static_cast<float>(e)));
    g->add("cls.output.bias", {1}, 0.2f);
  }
  g->write();
  return g;
}

// llama.cpp's scores for the tiny reranker (golden-rank's golden_dump): the
// query, and per document its text, the pair's tokens as llama-server formats
// them, the score of the pair alone and as one sequence of a batch of all pairs.
struct RerankGolden {
  struct Pair {
    std::string document;
    std::vector<int32_t> tokens;
    double score = 0, score_batched = 0;
  };
  std::string query;
  std::vector<Pair> pairs;
};

inline RerankGolden load_rerank_golden(const std::filesystem::path& path) {
  const nlohmann::json j = nlohmann::json::parse(read_file(path));
  RerankGolden g;
  g.query = j.at("query").get<std::string>();
  for (const auto& p : j.at("pairs")) {
    g.pairs.push_back({p.at("document").get<std::string>(), p.at("tokens").get<std::vector<int32_t>>(),
                       p.at("score").get<double>(), p.at("score_batched").get<double>()});
  }
  return g;
}

}  // namespace ferrite::test
