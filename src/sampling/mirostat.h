// Mirostat (Basu et al. 2021), versions 1 and 2, as llama.cpp defines them:
// adaptive truncation that steers the surprise (-log2 p of the chosen token)
// towards tau. Both keep mu, initialized to 2 * tau, and after each choice
// update mu -= eta * (surprise - tau), where the surprise uses the
// probability after truncation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sampling/candidates.h"
#include "sampling/rng.h"

namespace ferrite::sampling {

struct MirostatParams {
  float tau = 5.0f;  // target surprise (--mirostat-ent)
  float eta = 0.1f;  // learning rate (--mirostat-lr)
  int32_t m = 100;   // v1: candidates used to estimate the Zipf exponent
};

// v1: estimates the Zipf exponent s from the m most likely candidates,
//   s = sum_i t_i b_i / sum_i t_i^2, t_i = ln((i+2)/(i+1)), b_i = ln(p_i/p_{i+1}),
// then keeps the top k, k = ((s-1) 2^mu / (1 - n_vocab^-(s-1)))^(1/s)
// (at least 1), and draws. Returns the index of the chosen candidate.
class MirostatV1 {
 public:
  MirostatV1(const MirostatParams& params, int32_t n_vocab);
  size_t choose(Candidates& c, Rng& rng);
  float mu() const { return mu_; }
  void set_mu(float mu) { mu_ = mu; }
  void reset() { mu_ = 2.0f * params_.tau; }
  // The k that v1 would keep (exposed for tests).
  static double top_k_for(const Candidates& sorted_probs, int32_t m, float mu, int32_t n_vocab);

 private:
  MirostatParams params_;
  int32_t n_vocab_;
  float mu_;
};

// v2: keeps the candidates (by decreasing probability) up to the first whose
// surprise exceeds mu (at least one), renormalizes and draws.
class MirostatV2 {
 public:
  explicit MirostatV2(const MirostatParams& params);
  size_t choose(Candidates& c, Rng& rng);
  float mu() const { return mu_; }
  void set_mu(float mu) { mu_ = mu; }
  void reset() { mu_ = 2.0f * params_.tau; }

 private:
  MirostatParams params_;
  float mu_;
};

}  // namespace ferrite::sampling
