// Speculative decoding over one Sequence (ferrite run and chat): a drafter
// (drafter.h) proposes tokens, the target evaluates the last sampled token
// and the whole draft in ONE batch, and Generation::next samples every
// position from those logits in order. Draft token i is accepted when the
// target's token there equals it; the first difference ends the round, and
// the cells of the rejected drafts are removed from the cache (the target's
// token there is evaluated first thing in the next round, with the next
// draft).
//
// Why this keeps the target's distribution: a draft is a point mass q (one
// token d per position). The speculative-sampling rule accepts d with
// probability min(1, p(d)/q(d)) = p(d) and on rejection draws from (p - q)+
// normalized, which is p with d removed. Drawing x ~ p and accepting when
// x == d does exactly that: P(accept) = p(d), and x given x != d is p without
// d. Every emitted token is therefore a draw of the target's own sampler
// chain (penalties, grammar and all), with the same random stream as without
// speculation: greedy output is the same token for token, and sampled output
// is the same for a seed wherever the batched logits equal the one-token ones.
//
//   Speculation spec(drafter, {.n_max = 16});
//   std::span<const float> logits = seq.prefill(prompt);
//   while (!gen.done()) for (auto& s : spec.step(seq, gen, logits)) show(s.text);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "runtime/drafter.h"
#include "runtime/generation.h"
#include "runtime/sequence.h"

namespace ferrite::runtime {

struct SpeculativeParams {
  int n_max = 16;  // draft tokens per round at most (--draft-max)
  int n_min = 0;   // a shorter draft is not verified (--draft-min)
};

// Throws InvalidArgument for n_max < 0, n_min < 0 or n_min > n_max, naming the flags.
void validate(const SpeculativeParams& p);

struct SpeculativeStats {
  int64_t n_rounds = 0;    // target evaluations that verified a draft
  int64_t n_drafted = 0;   // draft tokens verified
  int64_t n_accepted = 0;  // of those, accepted
  double acceptance() const { return n_drafted > 0 ? static_cast<double>(n_accepted) / n_drafted : 0.0; }
  void add(const SpeculativeStats& o) {
    n_rounds += o.n_rounds;
    n_drafted += o.n_drafted;
    n_accepted += o.n_accepted;
  }
};

// One generation's speculation (the drafter may serve many in turn).
class Speculation {
 public:
  Speculation(Drafter& drafter, SpeculativeParams params);

  // One round: samples the next token (unless one is pending from the last
  // round), drafts, verifies, and returns the steps of every token emitted
  // (at least one). `logits` are the logits after the sequence's last token
  // when no token is pending; after the round they are again, or a token is
  // pending (its step already returned). Like Sequence::step a full sequence
  // shifts, or with shift off ends the generation (kContextFull).
  std::vector<GenerationStep> step(Sequence& seq, Generation& gen, std::span<const float>& logits);

  const SpeculativeStats& stats() const { return stats_; }

 private:
  // How many draft tokens this round may verify.
  int draft_budget(const Sequence& seq, const Generation& gen) const;
  // Samples the target over the verified batch; returns the tokens accepted.
  int verify(Sequence& seq, Generation& gen, std::span<const float> batch_logits,
             const std::vector<int32_t>& draft, std::vector<GenerationStep>& out);

  Drafter& drafter_;
  SpeculativeParams params_;
  std::optional<int32_t> pending_;  // sampled, shown, not yet evaluated
  std::vector<int32_t> context_;
  SpeculativeStats stats_;
};

// The steps of one turn of the token loop: a speculative round with `spec`,
// else one Sequence::step.
std::vector<GenerationStep> generation_steps(Sequence& seq, Generation& gen, std::span<const float>& logits,
                                             Speculation* spec);

}  // namespace ferrite::runtime
