// Logit bias and the repetition penalties over a window of recent tokens, as
// llama.cpp defines them.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>

#include "sampling/candidates.h"
#include "sampling/token_window.h"

namespace ferrite::sampling {

struct LogitBias {
  int32_t token;
  float bias;  // added to the token's logit (-inf bans it)
};

// logit += bias for every candidate named by a bias (biases for one token add).
void apply_logit_bias(Candidates& c, std::span<const LogitBias> biases);

struct PenaltyParams {
  int32_t last_n = 64;    // window size (resolved: >= 0); 0 disables
  float repeat = 1.0f;    // --repeat-penalty; 1 disables
  float frequency = 0.0f; // --frequency-penalty
  float presence = 0.0f;  // --presence-penalty
  int32_t newline_token = -1;  // the newline token, -1 when unknown
  bool penalize_newline = true;
};

// For every candidate seen c > 0 times among the last `last_n` accepted
// tokens: logit = logit <= 0 ? logit * repeat : logit / repeat, then
// logit -= c * frequency + presence. With penalize_newline false the newline
// token keeps its logit.
class Penalties {
 public:
  explicit Penalties(const PenaltyParams& params);

  void accept(int32_t token);
  void apply(Candidates& c) const;
  void reset();

  // Occurrences of `token` in the window.
  int count(int32_t token) const;
  bool active() const;

 private:
  PenaltyParams params_;
  TokenWindow window_;
  std::unordered_map<int32_t, int> counts_;
};

}  // namespace ferrite::sampling
