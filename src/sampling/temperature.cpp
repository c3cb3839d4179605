#include "sampling/temperature.h"

#include <algorithm>
#include <cmath>

namespace ferrite::sampling {

void temperature(Candidates& c, float t) {
  if (c.empty()) return;
  if (t <= 0.0f) {
    const Candidate best = c.items[best_index(c)];
    c.items.assign(1, best);
    c.sorted = true;
    return;
  }
  for (Candidate& x : c.items) x.logit /= t;
}

float dynamic_temperature(Candidates& c, float t, float range, float exponent) {
  if (!(range > 0.0f)) {
    temperature(c, t);
    return t;
  }
  if (c.size() <= 1) return t;
  const float t_min = std::max(0.0f, t - range);
  const float t_max = t + range;
  const double max_entropy = std::log(static_cast<double>(c.size()));
  softmax(c);
  double entropy = 0.0;
  for (const Candidate& x : c.items) {
    if (x.p > 0.0f) entropy -= static_cast<double>(x.p) * std::log(static_cast<double>(x.p));
  }
  const double normalized = entropy / max_entropy;
  const auto dyn_t = static_cast<float>(t_min + (t_max - t_min) * std::pow(normalized, static_cast<double>(exponent)));
  temperature(c, dyn_t);
  return dyn_t;
}

}  // namespace ferrite::sampling
