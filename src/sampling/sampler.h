// Choosing the next token from logits: greedy (argmax) or a seeded draw
// after temperature, top-k and top-p (nucleus) filtering. Deliberately small;
// the full sampler chain (penalties, min-p, grammars...) builds on it.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace ferrite::sampling {

struct SamplerParams {
  float temperature = 0.8f;  // <= 0: greedy
  int top_k = 40;            // <= 0: all tokens
  float top_p = 0.95f;       // >= 1: no nucleus cut
  uint64_t seed = 0;
};

// Index of the largest logit (the lowest index among equals). Empty input
// throws InvalidArgument.
int32_t argmax(std::span<const float> logits);

class Sampler {
 public:
  // Throws InvalidArgument for a NaN temperature or top_p outside (0, 1].
  explicit Sampler(const SamplerParams& params);

  int32_t sample(std::span<const float> logits);

  const SamplerParams& params() const { return params_; }

 private:
  struct Candidate {
    int32_t id;
    float p;
  };
  SamplerParams params_;
  std::mt19937_64 rng_;
  std::vector<Candidate> cand_;
};

}  // namespace ferrite::sampling
