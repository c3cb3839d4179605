// Speculative verification's promise (Batch::rows_as_steps): a batch's rows
// are the logits of the tokens' one-token steps, bit for bit. One check for
// every backend: a random prompt, k + 1 random tokens fed one at a time, then
// the same tokens again as one batch.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/context.h"

namespace ferrite::test {

struct RowsAgainstSteps {
  size_t n_logits = 0;
  size_t differ = 0;    // logits whose bits differ
  double worst = 0.0;   // largest absolute difference
};

// Sequence 0 of ctx is cleared first. as_steps false: the batch with the
// kernels its shape takes (for comparison).
inline RowsAgainstSteps rows_against_steps(runtime::Context& ctx, int prompt_len, int n_rows, uint32_t seed,
                                           bool as_steps = true) {
  const auto nv = static_cast<int32_t>(ctx.model().hparams().n_vocab);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> id(3, nv - 1);
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_len)), rows(static_cast<size_t>(n_rows));
  for (int32_t& t : prompt) t = id(rng);
  for (int32_t& t : rows) t = id(rng);
  ctx.remove_range(0, 0, -1);
  ctx.eval(prompt);
  std::vector<float> steps;
  for (const int32_t t : rows) {
    const std::span<const float> l = ctx.eval({&t, 1});
    steps.insert(steps.end(), l.begin(), l.end());
  }
  ctx.remove_range(0, prompt_len, -1);
  const std::span<const float> batch = ctx.eval(rows, 0, /*all_logits=*/true, as_steps);
  RowsAgainstSteps r;
  r.n_logits = steps.size();
  if (batch.size() != steps.size()) {
    r.differ = steps.size();
    r.worst = INFINITY;
    return r;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    if (std::memcmp(&steps[i], &batch[i], sizeof(float)) != 0) {
      ++r.differ;
      r.worst = std::max(r.worst, std::abs(static_cast<double>(steps[i]) - batch[i]));
    }
  }
  return r;
}

}  // namespace ferrite::test
