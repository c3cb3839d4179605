// The final seeded draw: one candidate with probability softmax(logit).
#pragma once

#include <cstddef>

#include "sampling/candidates.h"
#include "sampling/rng.h"

namespace ferrite::sampling {

// Index of the drawn candidate: with w_i = exp(logit_i - max) (in double),
// the first i whose running sum of w exceeds u * sum(w), u = rng.uniform().
// A candidate of weight 0 is never drawn. Requires a non-empty list.
size_t draw(const Candidates& c, Rng& rng);

}  // namespace ferrite::sampling
