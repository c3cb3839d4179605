#include "cpu/ops/lora.h"

namespace ferrite::cpu {

void lora_scale_add(float* y, const float* u, int64_t n, int64_t n_out, const float* user, float alpha,
                    int64_t rank) {
  for (int64_t t = 0; t < n; ++t) {
    if (user[t] == 0.0f) continue;
    const float s = alpha != 0.0f ? user[t] * alpha / static_cast<float>(rank) : user[t];
    float* yr = y + t * n_out;
    const float* ur = u + t * n_out;
    for (int64_t j = 0; j < n_out; ++j) yr[j] += s * ur[j];
  }
}

}  // namespace ferrite::cpu
