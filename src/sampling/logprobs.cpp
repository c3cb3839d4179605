#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace ferrite::sampling {

float token_logprob(std::span<const float> logits, int32_t token,
                    std::vector<std::pair<int32_t, float>>* top, int32_t n_top) {
  float max = -std::numeric_limits<float>::infinity();
  for (float l : logits) max = std::max(max, l);
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max);
  const float log_z = max + static_cast<float>(std::log(sum));
  if (top && n_top > 0) {
    const size_t k = std::min(static_cast<size_t>(n_top), logits.size());
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    top->clear();
    for (size_t i = 0; i < k; ++i) top->emplace_back(ids[i], logits[ids[i]] - log_z);
  }
  if (token < 0 || static_cast<size_t>(token) >= logits.size()) return -std::numeric_limits<float>::infinity();
  return logits[static_cast<size_t>(token)] - log_z;
}

}  // namespace ferrite::sampling
