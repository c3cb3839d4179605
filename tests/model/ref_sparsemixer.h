// Phi-3.5-MoE's router at inference ("sparsemixer" in transformers'
// modeling_phimoe.py), in double precision, for one token's router logits s:
// round j (the definition has two) takes m, the largest logit of the experts
// left, and its expert e* (the lower id on ties, as torch's max), masks
// every expert e left with (m - s_e) / max(|s_e|, m) > 2 jitter, and gives
// e* the softmax over the unmasked experts left at e*; e* then leaves.
// Read by ref_phimoe.h and the kernel tests (tests/cpu/sparsemixer_test.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ferrite::test {

// near_edge (optional): set when some expert's relative gap lies within
// `edge` (relative) of the threshold but not on it, where float arithmetic
// may round it to the other side (a gap exactly on it, as logits on a
// coarse grid give, is exact in float too).
inline void ref_sparsemixer(const std::vector<double>& s, int64_t k, double jitter, std::vector<int64_t>& ids,
                            std::vector<double>& weights, bool* near_edge = nullptr, double edge = 1e-6) {
  const int64_t n = static_cast<int64_t>(s.size());
  std::vector<bool> left(static_cast<size_t>(n), true);
  ids.clear();
  weights.clear();
  if (near_edge != nullptr) *near_edge = false;
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t e = 0; e < n; ++e) {
      if (left[e] && (best < 0 || s[e] > s[best])) best = e;
    }
    const double m = s[best];
    double sum = 0;
    for (int64_t e = 0; e < n; ++e) {
      if (!left[e]) continue;
      const double gap = (m - s[e]) / std::max(std::fabs(s[e]), m);
      if (near_edge != nullptr && gap != 2.0 * jitter &&
          std::fabs(gap - 2.0 * jitter) <= edge * std::max(1.0, 2.0 * jitter)) {
        *near_edge = true;
      }
      if (!(gap > 2.0 * jitter)) sum += std::exp(s[e] - m);
    }
    ids.push_back(best);
    weights.push_back(1.0 / sum);
    left[best] = false;
  }
}

}  // namespace ferrite::test
