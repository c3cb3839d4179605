// Reference implementations: plain loops, the definition the SIMD paths are
// tested against.
#include <cmath>

#include "core/fp16.h"
#include "cpu/fast_exp.h"
#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {

float dot_f32(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

float dot_f16(const uint16_t* a, const uint16_t* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += fp16_to_fp32(a[i]) * fp16_to_fp32(b[i]);
  return sum;
}

float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += bf16_to_fp32(a[i]) * bf16_to_fp32(b[i]);
  return sum;
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
}

void axpy_f16(float a, const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}

double softmax_exp(float* x, int64_t n, float max) {
  const int64_t fast = n - n % kExpGroup;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = i < fast ? fast_exp::exp_ref(x[i] - max) : std::exp(x[i] - max);
    sum += x[i];
  }
  return sum;
}

void silu(const float* x, float* y, int64_t n) {
  const int64_t fast = n - n % kExpGroup;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = x[i] / (1.0f + (i < fast ? fast_exp::exp_ref(-x[i]) : std::exp(-x[i])));
  }
}

void rotate(float* a, float* b, const float* c, const float* s, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) {
    const float x0 = a[i * stride], x1 = b[i * stride];
    a[i * stride] = std::fma(x0, c[i], -(x1 * s[i]));
    b[i * stride] = std::fma(x0, s[i], x1 * c[i]);
  }
}


void tile_f32(const float* w, int64_t ws, int64_t nr, const float* a, int64_t as, int64_t nt, int64_t n, float* y,
              int64_t ys) {
  tile_by_dots(dot_f32, w, ws, nr, a, as, nt, n, y, ys);
}
void tile_f16(const uint16_t* w, int64_t ws, int64_t nr, const uint16_t* a, int64_t as, int64_t nt, int64_t n,
              float* y, int64_t ys) {
  tile_by_dots(dot_f16, w, ws, nr, a, as, nt, n, y, ys);
}
void tile_bf16(const uint16_t* w, int64_t ws, int64_t nr, const uint16_t* a, int64_t as, int64_t nt, int64_t n,
               float* y, int64_t ys) {
  tile_by_dots(dot_bf16, w, ws, nr, a, as, nt, n, y, ys);
}

}  // namespace

const VecOps& vec_ops_ref() {
  static const VecOps ops{dot_f32,     dot_f16,     dot_f32,  dot_f16,     dot_bf16, f32_to_f16,
                          f16_to_f32, f32_to_bf16, axpy_f16, softmax_exp, silu,     rotate,
                          tile_f32,   tile_f16,    tile_bf16};
  return ops;
}

}  // namespace ferrite::cpu
