#include "cpu/ops/sparsemixer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ferrite::cpu {
namespace {

bool chosen_before(const int32_t* ids, int64_t j, int64_t e) {
  for (int64_t i = 0; i < j; ++i) {
    if (ids[i] == e) return true;
  }
  return false;
}

}  // namespace

void sparsemixer_route(const float* logits, int64_t n_expert, int64_t k, float jitter, int32_t* ids,
                       float* weights) {
  const float threshold = 2.0f * jitter;
  for (int64_t j = 0; j < k; ++j) {
    // The largest remaining logit (NaN below everything; ties: the lower id).
    int64_t best = -1;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t e = 0; e < n_expert; ++e) {
      if (chosen_before(ids, j, e)) continue;
      const float key = std::isnan(logits[e]) ? -std::numeric_limits<float>::infinity() : logits[e];
      if (best < 0 || key > m) {
        best = e;
        m = key;
      }
    }
    ids[j] = static_cast<int32_t>(best);
    if (m == -std::numeric_limits<float>::infinity()) {
      weights[j] = 0.0f;
      continue;
    }
    // The softmax over the remaining experts within the relative gap, at the best one.
    double sum = 0.0;
    for (int64_t e = 0; e < n_expert; ++e) {
      const float s = logits[e];
      if (std::isnan(s) || chosen_before(ids, j, e)) continue;
      const float gap = (m - s) / std::max(std::fabs(s), m);
      if (gap > threshold) continue;
      sum += std::exp(static_cast<double>(s - m));
    }
    weights[j] = static_cast<float>(1.0 / sum);
  }
}

}  // namespace ferrite::cpu
