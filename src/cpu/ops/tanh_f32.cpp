// Compiled with -ffp-contract=off (src/cpu/CMakeLists.txt): every product
// and sum of tanh_f32_impl.h rounds on its own, as in libm.
#include "cpu/ops/tanh_f32.h"

#include <cstring>

#include "cpu/ops/tanh_f32_impl.h"

namespace ferrite::cpu {
namespace {

struct HostOps {
  static float mul(float a, float b) { return a * b; }
  static float add(float a, float b) { return a + b; }
  static float sub(float a, float b) { return a - b; }
  static float div(float a, float b) { return a / b; }
  static uint32_t bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
  }
  static float from(uint32_t u) {
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
  }
};

}  // namespace

float tanh_f32(float x) { return tanh_detail::tanh_f32<HostOps>(x); }

void softcap_f32(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = tanh_f32(x[i] * inv) * cap;
}

}  // namespace ferrite::cpu
