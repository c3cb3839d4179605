#include "sampling/draw.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ferrite::sampling {

size_t draw(const Candidates& c, Rng& rng) {
  const auto& v = c.items;
  if (v.size() <= 1) return 0;
  float max = v[0].logit;
  for (const Candidate& x : v) max = std::max(max, x.logit);
  const bool has_pos_inf = max == std::numeric_limits<float>::infinity();
  // The weights are recomputed in the second pass rather than stored: the
  // list can be the whole vocabulary.
  auto weight = [&](const Candidate& x) {
    if (has_pos_inf) return x.logit == max ? 1.0 : 0.0;
    return std::exp(static_cast<double>(x.logit) - static_cast<double>(max));
  };
  double total = 0.0;
  for (const Candidate& x : v) total += weight(x);
  const double target = rng.uniform() * total;
  double acc = 0.0;
  size_t last_positive = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double w = weight(v[i]);
    if (w <= 0.0) continue;
    acc += w;
    last_positive = i;
    if (target < acc) return i;
  }
  return last_positive;  // rounding left target at the very top
}

}  // namespace ferrite::sampling
