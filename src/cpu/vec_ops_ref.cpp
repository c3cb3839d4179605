// Reference implementations: plain loops, the definition the SIMD paths are
// tested against (the dots and softmax sums in the SIMD levels' order).
#include <cmath>

#include "core/fp16.h"
#include "cpu/fast_exp.h"
#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {

// The dots sum in the order vec_ops.h describes (the SIMD levels' order,
// llama.cpp's AVX-512 one), written as plain loops over 16 lanes: the
// goldens made in that order hold at the scalar level too.
constexpr int kLanes = 16;

// Lanes 0-15 reduced as _mm512_reduce_add_ps does: halves, then quarters,
// then (0 + 2) + (1 + 3).
float reduce_lanes(const float* v) {
  float h[8], q[4];
  for (int i = 0; i < 8; ++i) h[i] = v[i + 8] + v[i];
  for (int i = 0; i < 4; ++i) q[i] = h[i + 4] + h[i];
  return (q[0] + q[2]) + (q[1] + q[3]);
}

// One accumulator of 16 lanes, element i fused into lane i % 16 (n % 16 == 0).
template <typename Prod>
float sum_one_accumulator(const Prod& at, int64_t n) {
  float acc[kLanes] = {};
  for (int64_t i = 0; i < n; ++i) acc[i % kLanes] = std::fma(at.a(i), at.b(i), acc[i % kLanes]);
  return reduce_lanes(acc);
}

// Four accumulators, one per 16 of each block of 64, combined (0+2)+(1+3)
// lane by lane before the reduction (np % 64 == 0).
template <typename Prod>
float sum_blocks64(const Prod& at, int64_t np) {
  float acc[4][kLanes] = {};
  for (int64_t i = 0; i < np; ++i) {
    float& lane = acc[(i % 64) / kLanes][i % kLanes];
    lane = std::fma(at.a(i), at.b(i), lane);
  }
  float c[kLanes];
  for (int l = 0; l < kLanes; ++l) c[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  return reduce_lanes(c);
}

struct ProdF32 {
  const float* pa;
  const float* pb;
  float a(int64_t i) const { return pa[i]; }
  float b(int64_t i) const { return pb[i]; }
};
struct ProdF16 {
  const uint16_t* pa;
  const uint16_t* pb;
  float a(int64_t i) const { return fp16_to_fp32(pa[i]); }
  float b(int64_t i) const { return fp16_to_fp32(pb[i]); }
};

// Blocks of 64, then the tail: whole 16s and one 8 as rounded products added
// in order, the last < 8 fused.
float dot_f32_unrolled(const float* a, const float* b, int64_t n) {
  const int64_t np = n - n % 64;
  float sum = np > 0 ? sum_blocks64(ProdF32{a, b}, np) : 0.0f;
  const int64_t rest = n - np;
  const int64_t added = np + rest / kLanes * kLanes + (rest % kLanes >= 8 ? 8 : 0);
  int64_t i = np;
  for (; i < added; ++i) sum += a[i] * b[i];
  for (; i < n; ++i) sum = std::fma(a[i], b[i], sum);
  return sum;
}

float dot_f32(const float* a, const float* b, int64_t n) {
  return n % kLanes == 0 ? sum_one_accumulator(ProdF32{a, b}, n) : dot_f32_unrolled(a, b, n);
}

// Blocks of 64, then the tail's rounded products summed in double.
float dot_f16_unrolled(const uint16_t* a, const uint16_t* b, int64_t n) {
  const int64_t np = n - n % 64;
  double sum = np > 0 ? sum_blocks64(ProdF16{a, b}, np) : 0.0;
  for (int64_t i = np; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(a[i]) * fp16_to_fp32(b[i]));
  return static_cast<float>(sum);
}

float dot_f16(const uint16_t* a, const uint16_t* b, int64_t n) {
  return n % kLanes == 0 ? sum_one_accumulator(ProdF16{a, b}, n) : dot_f16_unrolled(a, b, n);
}

// vdpbf16ps's order: lane l of each 32 values takes the pair (2l, 2l + 1),
// the odd product added first, each addition rounded (products of bf16
// values are exact in f32); zeros past n.
float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  float acc[kLanes] = {};
  auto prod = [&](int64_t i) { return i < n ? bf16_to_fp32(a[i]) * bf16_to_fp32(b[i]) : 0.0f; };
  for (int64_t base = 0; base < n; base += 2 * kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] = (acc[l] + prod(base + 2 * l + 1)) + prod(base + 2 * l);
  }
  return reduce_lanes(acc);
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

// Groups of 16 through fast_exp, each reduced as reduce_lanes does and
// added in double; the rest libm's expf, added one by one.
double softmax_exp(float* x, int64_t n, float max) {
  const int64_t fast = n - n % kExpGroup;
  double sum = 0.0;
  for (int64_t g = 0; g < fast; g += kLanes) {
    for (int64_t i = g; i < g + kLanes; ++i) x[i] = fast_exp::exp_ref(x[i] - max);
    sum += static_cast<double>(reduce_lanes(x + g));
  }
  for (int64_t i = fast; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
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
  static const VecOps ops{dot_f32,     dot_f16,     dot_f32_unrolled, dot_f16_unrolled, dot_bf16, f32_to_f16,
                          f16_to_f32, f32_to_bf16, axpy_f16, softmax_exp, silu,     rotate,
                          tile_f32,   tile_f16,    tile_bf16};
  return ops;
}

}  // namespace ferrite::cpu
