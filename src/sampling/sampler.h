// The sampler chain: from a step's logits to the next token, the way
// llama.cpp's common sampler does it:
//
//   [constraint] -> logit bias -> stages in `params.samplers` order -> draw
//   [constraint] -> logit bias -> temperature -> mirostat v1/v2      (--mirostat 1/2)
//
//   sampling::Sampler s(params, {.n_vocab = V, .n_ctx = C});
//   for (int32_t t : prompt) s.accept(t);     // penalties and DRY see the prompt
//   int32_t next = s.sample(logits);          // choose, then accept
//
// Candidates whose logit is -inf (or NaN) are dropped before the stages run:
// they can never be chosen. Random stages (XTC, the draw, mirostat) each own a
// stream derived from the seed, so a seed gives the same tokens on every run.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sampling/candidates.h"
#include "sampling/constraint.h"
#include "sampling/dry.h"
#include "sampling/mirostat.h"
#include "sampling/params.h"
#include "sampling/penalties.h"
#include "sampling/rng.h"

namespace ferrite::sampling {

// What the chain needs to know of the model and context.
struct ModelInfo {
  int32_t n_vocab = 0;        // 0: unknown (logit-bias ids unchecked; mirostat v1 uses the logits' count)
  int32_t n_ctx = 0;          // context size: resolves --repeat-last-n -1
  int32_t n_ctx_train = 0;    // training context: resolves --dry-penalty-last-n -1 and caps
                              // the DRY window (0: n_ctx, no cap)
  int32_t newline_token = -1; // for --no-penalize-nl
  TokenText text = {};        // turns --dry-sequence-breaker strings into tokens (used by
                              // the constructor only)
  std::vector<std::vector<int32_t>> dry_breaker_tokens = {};  // extra breakers, as token sequences
};

// Index of the largest logit (the lowest index among equals). Empty input
// throws InvalidArgument.
int32_t argmax(std::span<const float> logits);

class Sampler {
 public:
  // Throws InvalidArgument for invalid parameters (see validate()), a
  // logit-bias id outside the vocabulary, a -1 window without the context
  // size, or DRY string breakers without the vocabulary's pieces.
  explicit Sampler(const SamplerParams& params, ModelInfo info = {});
  ~Sampler();
  Sampler(Sampler&&) noexcept;
  Sampler& operator=(Sampler&&) noexcept;

  // choose() then accept() of the result.
  int32_t sample(std::span<const float> logits);

  // The next token, without recording it. Throws InvalidArgument when no
  // token is possible (every logit -inf or NaN, or every one disallowed).
  int32_t choose(std::span<const float> logits);

  // Records a token: the penalties' and DRY's history, and the constraint's
  // state when `advance_constraint` (prompt tokens usually pass false).
  void accept(int32_t token, bool advance_constraint = true);

  // Forgets the history, restores mirostat's mu and the constraint's initial
  // state, and restarts the random streams from the seed.
  void reset();

  // Installs a constraint (nullptr removes it). With constraint_first false
  // (llama.cpp's default) the chain first runs unconstrained and the
  // constraint is asked only whether the chosen token is allowed; when it is
  // not, the chain runs again on the constrained candidates (and mirostat's mu
  // is not updated twice). With true, every step runs constrained.
  void set_constraint(std::shared_ptr<Constraint> constraint, bool constraint_first = false);

  const SamplerParams& params() const { return params_; }
  // The seed in use (kRandomSeed resolved to the random one picked).
  uint64_t seed() const { return seed_; }
  // The candidates left by the last choose(), with their probabilities.
  const Candidates& last_candidates();
  // "logits -> logit-bias -> penalties -> ... -> dist".
  std::string describe() const;
  // Mirostat's current mu (nullopt without mirostat).
  std::optional<float> mirostat_mu() const;

 private:
  int32_t run_chain(std::span<const float> logits, bool constrained);
  // True when the chain reduces to the argmax (greedy, no stage that moves
  // or removes the best token): run_chain then skips the candidate list.
  bool plain_greedy(bool constrained) const;
  void apply_stage(Stage stage);
  void require_candidates() const;

  SamplerParams params_;
  ModelInfo info_;
  uint64_t seed_;
  Penalties penalties_;
  Dry dry_;
  std::unique_ptr<MirostatV1> mirostat_v1_;
  std::unique_ptr<MirostatV2> mirostat_v2_;
  Rng draw_rng_;
  Rng xtc_rng_;
  std::shared_ptr<Constraint> constraint_;
  bool constraint_first_ = false;
  Candidates cand_;
  bool probs_ready_ = false;
};

}  // namespace ferrite::sampling
