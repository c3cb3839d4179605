// The stages that cut the candidate list, each as llama.cpp defines it (see
// llama-sampling.cpp; the comment of each function states the definition).
// `min_keep` is the --min-keep option: a stage never leaves fewer candidates
// than that (0 and 1 both mean "at least one").
#pragma once

#include <cstddef>
#include <cstdint>

#include "sampling/candidates.h"
#include "sampling/rng.h"

namespace ferrite::sampling {

// The k candidates with the largest logits. k <= 0: no cut; k > size: all.
void top_k(Candidates& c, int32_t k);

// Nucleus: sorted by probability, the shortest prefix whose cumulative
// probability reaches p (>= p), and at least min_keep. p >= 1: no cut;
// p <= 0: the single most likely candidate.
void top_p(Candidates& c, float p, size_t min_keep);

// The candidates whose probability is at least p times the largest one,
// i.e. logit >= max_logit + ln(p); the best candidate always stays, and at
// least min_keep (in logit order). p <= 0: no cut.
void min_p(Candidates& c, float p, size_t min_keep);

// Locally typical sampling (Meister et al. 2022): with H the entropy of the
// distribution, candidates are ordered by |-ln p_i - H| (most typical first)
// and the shortest prefix whose cumulative probability exceeds p (> p) is
// kept, and at least min_keep. p >= 1: no cut. Leaves the typical order.
void typical_p(Candidates& c, float p, size_t min_keep);

// Top-n-sigma (Tang et al. 2024): keeps the candidates whose logit is at
// least max_logit - n * sigma, sigma the standard deviation (population) of
// the finite logits. n <= 0 or one candidate: no cut.
void top_n_sigma(Candidates& c, float n);

// Exclude Top Choices: with chance `probability` (one draw from `rng`, made
// only when the stage is active: probability > 0, threshold <= 0.5 and at
// least two candidates), removes every candidate whose probability is at
// least `threshold` except the least likely of them, unless that would leave
// fewer than min_keep.
void xtc(Candidates& c, float probability, float threshold, size_t min_keep, Rng& rng);
// Thresholds above this turn XTC off.
constexpr float kXtcMaxThreshold = 0.5f;

}  // namespace ferrite::sampling
