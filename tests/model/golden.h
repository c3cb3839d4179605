// llama.cpp's reference evaluations (shared/golden/logits/*.json) and the
// comparison of our logits with them.
#pragma once

#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/test_data.h"

namespace ferrite::test {

struct GoldenPosition {
  double lse = 0;
  std::vector<std::pair<int32_t, double>> top;  // the 20 largest logits, descending
};

struct Golden {
  std::string model;
  std::vector<int32_t> tokens;
  std::vector<GoldenPosition> positions;
  std::vector<int32_t> greedy;
};

inline Golden load_golden(const std::filesystem::path& path) {
  const nlohmann::json j = nlohmann::json::parse(read_file(path));
  Golden g;
  g.model = j.at("model").get<std::string>();
  g.tokens = j.at("tokens").get<std::vector<int32_t>>();
  for (const auto& p : j.at("positions")) {
    GoldenPosition gp;
    gp.lse = p.at("lse").get<double>();
    for (const auto& t : p.at("top")) gp.top.emplace_back(t.at(0).get<int32_t>(), t.at(1).get<double>());
    g.positions.push_back(std::move(gp));
  }
  if (j.contains("greedy")) g.greedy = j.at("greedy").get<std::vector<int32_t>>();
  return g;
}

// An encoder's golden (tests/model/golden/<family>.p<N>.json of the
// embedding families): llama.cpp's hidden state of every token (pooling
// none) and its pooled embedding under the file's pooling type.
struct EmbeddingGolden {
  std::vector<int32_t> tokens;
  std::vector<std::vector<double>> states;  // [tokens][n_embd]
  int pooling = -1;                         // llama_pooling_type: 1 mean, 2 cls, 3 last
  std::vector<double> pooled;               // [n_embd]
};

inline EmbeddingGolden load_embedding_golden(const std::filesystem::path& path) {
  const nlohmann::json j = nlohmann::json::parse(read_file(path));
  EmbeddingGolden g;
  g.tokens = j.at("tokens").get<std::vector<int32_t>>();
  g.states = j.at("states").get<std::vector<std::vector<double>>>();
  g.pooling = j.at("pooling").get<int>();
  g.pooled = j.at("pooled").get<std::vector<double>>();
  return g;
}

inline double log_sum_exp(std::span<const float> x) {
  double max = -INFINITY;
  for (float v : x) max = std::max(max, static_cast<double>(v));
  double s = 0;
  for (float v : x) s += std::exp(v - max);
  return max + std::log(s);
}

// Largest absolute difference between our logits of one position and the
// golden top-20 and log-sum-exp.
inline double max_logit_error(std::span<const float> ours, const GoldenPosition& g) {
  double err = std::fabs(log_sum_exp(ours) - g.lse);
  for (const auto& [id, v] : g.top) err = std::max(err, std::fabs(ours[static_cast<size_t>(id)] - v));
  return err;
}

// Range of the golden top-20 logits plus their magnitude: the scale that
// relative tolerances for rounded arithmetic refer to.
inline double logit_scale(const GoldenPosition& g) {
  double m = 0;
  for (const auto& [id, v] : g.top) m = std::max(m, std::fabs(v));
  return m;
}

// A parameterized test's name from its golden file: the file name without
// ".json", other characters than letters and digits as '_'
// ("golden/logits/synth-gemma2-f32.p2.json" -> "synth_gemma2_f32_p2"), so
// that filters can pick prompts (scripts/test-neon leaves out "*_p2").
inline std::string golden_case_name(const std::string& golden) {
  std::string name = std::filesystem::path(golden).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

}  // namespace ferrite::test
