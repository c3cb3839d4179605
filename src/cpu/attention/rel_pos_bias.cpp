#include "cpu/attention/rel_pos_bias.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace ferrite::cpu {

int32_t rel_pos_bucket(int32_t r, int64_t n_buckets, bool bidirectional) {
  int64_t n = n_buckets;
  int32_t bucket = 0;
  int32_t d = 0;
  if (bidirectional) {
    n /= 2;
    if (r > 0) bucket += static_cast<int32_t>(n);
    d = std::abs(r);
  } else {
    d = std::max(-r, 0);
  }
  const int64_t exact = n / 2;
  if (d < exact) return bucket + d;
  // llama.cpp's mixture of precisions: a float log of the ratio, times the
  // bucket count as float, over a double log; the sum floored as float.
  const float lr = std::log(static_cast<float>(static_cast<double>(d) / static_cast<double>(exact)));
  const double big = static_cast<double>(exact) +
                     static_cast<double>(lr * static_cast<float>(n - exact)) /
                         std::log(static_cast<double>(kRelMaxDistance) / static_cast<double>(exact));
  const auto large = static_cast<int64_t>(std::floor(static_cast<float>(big)));
  return bucket + static_cast<int32_t>(std::min<int64_t>(large, n - 1));
}

void rel_bias_table(const float* rel_b, int64_t n_buckets, int64_t n_head, bool bidirectional,
                    std::vector<float>& out) {
  const int64_t width = rel_bias_width(bidirectional);
  out.resize(static_cast<size_t>(n_head * width));
  for (int64_t i = 0; i < width; ++i) {
    // causal: i = q - k, so r = -i; bidirectional: i - kRelMaxDistance = k - q = r.
    const auto r = static_cast<int32_t>(bidirectional ? i - kRelMaxDistance : -i);
    const int32_t b = rel_pos_bucket(r, n_buckets, bidirectional);
    for (int64_t h = 0; h < n_head; ++h) out[static_cast<size_t>(h * width + i)] = rel_b[b * n_head + h];
  }
}

}  // namespace ferrite::cpu
