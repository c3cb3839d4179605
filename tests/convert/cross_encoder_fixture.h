// The tiny transformers BERT cross-encoder (BertForSequenceClassification,
// one label, two token types: ms-marco-MiniLM's class;
// tests/convert/fixtures/tiny/bert-reranker, scripts/train_testbed.py
// make_tiny_reranker) and what transformers computed for it on the CPU in
// f32 (from the weights of seeded_checkpoint.h): for its query and each document, BERT's pair [CLS] q [SEP] d [SEP]
// (tokens from the `tokenizers` WordPiece model) with the segment ids
// (`token_types`, the document and its [SEP] type 1) and its score, the score
// with every token type 0, and llama-server's layout [CLS] q [SEP] [SEP] d
// [SEP] with its score (types 0). convert_cross_encoder() converts it to an
// f32 GGUF (bert, pooling rank) for the tests of the convert, server and
// CUDA suites.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "convert/converter.h"
#include "support/temp_dir.h"
#include "seeded_checkpoint.h"
#include "support/test_data.h"

namespace ferrite::test {

struct CrossEncoderFixture {
  struct Pair {
    std::string document;
    std::vector<int32_t> tokens, types, server_tokens;
    double score = 0, score_types_0 = 0, server_score = 0;
  };
  std::filesystem::path dir;
  std::string query;
  std::vector<Pair> pairs;
};

inline CrossEncoderFixture load_cross_encoder_fixture() {
  CrossEncoderFixture f;
  f.dir = fixture_source("tiny/bert-reranker");
  const nlohmann::json j = nlohmann::json::parse(read_file(f.dir / "reference.json"));
  f.query = j.at("query").get<std::string>();
  for (const auto& p : j.at("pairs")) {
    f.pairs.push_back({p.at("document").get<std::string>(), p.at("tokens").get<std::vector<int32_t>>(),
                       p.at("token_types").get<std::vector<int32_t>>(),
                       p.at("server_tokens").get<std::vector<int32_t>>(), p.at("score").get<double>(),
                       p.at("score_types_0").get<double>(), p.at("server_score").get<double>()});
  }
  return f;
}

// The fixture converted with f32 tensors into `out` (the tiny WordPiece
// vocabulary's pre-tokenizer named, as tests/convert does); the GGUF's path.
inline std::string convert_cross_encoder(const CrossEncoderFixture& f, const TempDir& out) {
  convert::ConvertOptions opt;
  opt.outtype = TensorType::F32;
  opt.vocab.pre_override = "llama-bpe";
  const std::string path = out.file("bert-reranker.gguf");
  convert::convert_checkpoint(seeded_fixture("tiny/bert-reranker", out).string(), path, opt);
  return path;
}

}  // namespace ferrite::test
