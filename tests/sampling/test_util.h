// Helpers shared by the sampling tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sampling/candidates.h"

namespace ferrite::sampling::test {

inline Candidates make(const std::vector<float>& logits) {
  Candidates c;
  fill_candidates(c, logits);
  return c;
}

// The ids left, sorted ascending (for set comparisons).
inline std::vector<int32_t> id_set(const Candidates& c) {
  std::vector<int32_t> ids;
  for (const Candidate& x : c.items) ids.push_back(x.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

// The ids left, in the list's order.
inline std::vector<int32_t> ids_in_order(const Candidates& c) {
  std::vector<int32_t> ids;
  for (const Candidate& x : c.items) ids.push_back(x.id);
  return ids;
}

// softmax computed here, independently of the library, in double.
inline std::vector<double> ref_softmax(const std::vector<double>& logits) {
  double max = logits[0];
  for (double l : logits) max = std::max(max, l);
  std::vector<double> p(logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(logits[i] - max);
  for (double& x : p) x /= sum;
  return p;
}

// Logits whose softmax is exactly `probs` (up to rounding): ln p.
inline std::vector<float> logits_for(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

}  // namespace ferrite::sampling::test
