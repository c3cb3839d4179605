#include "cpu/ops/relu_sqr.h"

namespace ferrite::cpu {

void relu_sqr_inplace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float r = x[i] > 0.0f ? x[i] : 0.0f;
    x[i] = r * r;
  }
}

void relu_inplace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

}  // namespace ferrite::cpu
