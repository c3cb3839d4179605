// Small helpers of the tests that compare logits: the largest absolute
// difference, the logit scale (largest magnitude) tolerances are relative
// to, and random token ids of a vocabulary.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace ferrite::test {

inline double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

inline double logit_magnitude(std::span<const float> l) {
  double m = 0;
  for (float v : l) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

// n ids in [3, min(n_vocab, 4000)) (past the usual control tokens), seeded.
inline std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(3, static_cast<int32_t>(std::min<int64_t>(n_vocab, 4000) - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

// n ids anywhere in [0, n_vocab), seeded (control ids included).
inline std::vector<int32_t> any_tokens(int64_t n, int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

}  // namespace ferrite::test
