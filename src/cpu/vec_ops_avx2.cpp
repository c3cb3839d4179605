// AVX2 + FMA + F16C paths. Tails shorter than a vector fall back to scalar
// code so any n is accepted.
#include <immintrin.h>

#include <cmath>

#include "core/fp16.h"
#include "cpu/fast_exp.h"
#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kLanes = 8;

inline float hsum(__m256 v) {
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

inline __m256 load_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline __m256 load_bf16(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

float dot_f32(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + kLanes), _mm256_loadu_ps(b + i + kLanes), acc1);
  }
  for (; i + kLanes <= n; i += kLanes) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  }
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

float dot_f16(const uint16_t* a, const uint16_t* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    acc0 = _mm256_fmadd_ps(load_f16(a + i), load_f16(b + i), acc0);
    acc1 = _mm256_fmadd_ps(load_f16(a + i + kLanes), load_f16(b + i + kLanes), acc1);
  }
  for (; i + kLanes <= n; i += kLanes) acc0 = _mm256_fmadd_ps(load_f16(a + i), load_f16(b + i), acc0);
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += fp16_to_fp32(a[i]) * fp16_to_fp32(b[i]);
  return sum;
}

float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    acc0 = _mm256_fmadd_ps(load_bf16(a + i), load_bf16(b + i), acc0);
    acc1 = _mm256_fmadd_ps(load_bf16(a + i + kLanes), load_bf16(b + i + kLanes), acc1);
  }
  for (; i + kLanes <= n; i += kLanes) acc0 = _mm256_fmadd_ps(load_bf16(a + i), load_bf16(b + i), acc0);
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += bf16_to_fp32(a[i]) * bf16_to_fp32(b[i]);
  return sum;
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) _mm256_storeu_ps(y + i, load_f16(x + i));
  for (; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
}

void axpy_f16(float a, const uint16_t* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, load_f16(x + i), _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}

// fast_exp lane-wise; lanes with |n| > 192 (results 0 or inf) and NaN are
// fixed up from the scalar definition.
inline __m256 exp8(__m256 x) {
  using namespace fast_exp;
  const __m256 shift = _mm256_set1_ps(kShift);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), shift);
  const __m256 n = _mm256_sub_ps(z, shift);
  const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x));
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 j = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(kP5), b, _mm256_set1_ps(kP4)), u,
                      _mm256_fmadd_ps(_mm256_set1_ps(kP3), b, _mm256_set1_ps(kP2))),
      u, _mm256_fmadd_ps(_mm256_set1_ps(kP1), b, _mm256_set1_ps(1.0f)));
  // 2^n for |n| <= 126 by building the exponent; larger |n| go scalar.
  const __m256 abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), n);
  const int big = _mm256_movemask_ps(_mm256_cmp_ps(abs_n, _mm256_set1_ps(126.0f), _CMP_NLE_UQ));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 r = _mm256_mul_ps(j, _mm256_castsi256_ps(e));
  if (big != 0) {
    alignas(32) float xs[8], rs[8];
    _mm256_store_ps(xs, x);
    _mm256_store_ps(rs, r);
    for (int i = 0; i < 8; ++i) {
      if ((big >> i) & 1) rs[i] = exp_ref(xs[i]);
    }
    r = _mm256_load_ps(rs);
  }
  return r;
}

double softmax_exp(float* x, int64_t n, float max) {
  const int64_t fast = n - n % kExpGroup;
  double sum = 0.0;
  const __m256 vmax = _mm256_set1_ps(max);
  for (int64_t i = 0; i < fast; i += 8) {
    const __m256 v = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax));
    _mm256_storeu_ps(x + i, v);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    for (float l : lanes) sum += l;
  }
  for (int64_t i = fast; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  return sum;
}

void silu(const float* x, float* y, int64_t n) {
  const int64_t fast = n - n % kExpGroup;
  for (int64_t i = 0; i < fast; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), v));
    _mm256_storeu_ps(y + i, _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), e)));
  }
  for (int64_t i = fast; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

// std::fma compiles to vfmadd here.
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

const VecOps& vec_ops_avx2() {
  static const VecOps ops{dot_f32,     dot_f16,     dot_f32,  dot_f16,     dot_bf16, f32_to_f16,
                          f16_to_f32, f32_to_bf16, axpy_f16, softmax_exp, silu,     rotate,
                          tile_f32,   tile_f16,    tile_bf16};
  return ops;
}

}  // namespace ferrite::cpu
