// Normalization and printing of `ferrite embed`'s vectors, with the
// semantics of llama.cpp's llama-embedding (--embd-normalize,
// --embd-output-format).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferrite::tools {

// --embd-normalize values with a name; any p > 2 is a p-norm.
constexpr int kNormNone = -1;
constexpr int kNormMaxAbsInt16 = 0;  // scaled so the largest |x| is kInt16Scale
constexpr int kNormTaxicab = 1;
constexpr int kNormEuclidean = 2;
constexpr double kInt16Scale = 32760.0;

// Scales `v` in place: by 1 / (its max-abs / kInt16Scale), its p-norm, or
// not at all (kNormNone). A zero vector stays zero. `mode` < -1 is refused
// by the caller.
void normalize_embedding(std::vector<float>& v, int mode);

// What to print: each row is one embedding (pooled: one per prompt; pooling
// none: one per token, in prompt order).
struct EmbeddingReport {
  std::vector<std::vector<float>> rows;
  std::vector<std::string> prompts;  // for the text format's similarity matrix
  bool per_token = false;
  int normalize = kNormEuclidean;    // integers are printed without decimals for mode 0
};

// "text": llama-embedding's human-readable lines ("embedding i: ..."; all
// values of a single pooled embedding, the first 16 of several plus their
// cosine similarity matrix; per token the first and last 3 values).
// "json": {"object":"list","data":[{"object":"embedding","index":i,
// "embedding":[...]}, ...]}. "array": [[...], ...].
std::string format_embeddings(const EmbeddingReport& report, const std::string& format);

// Cosine similarity (1 for two zero vectors, 0 for one: llama.cpp's rule).
double cosine_similarity(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace ferrite::tools
