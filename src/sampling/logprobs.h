// Log-probabilities of a step's tokens (log-softmax of the raw logits).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace ferrite::sampling {

// log p(token) and the `n_top` most likely (id, log p), best first (ties:
// lower id first).
float token_logprob(std::span<const float> logits, int32_t token,
                    std::vector<std::pair<int32_t, float>>* top, int32_t n_top);

}  // namespace ferrite::sampling
