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

// Every sum below is ordered as the AVX-512 table orders it (see
// vec_ops_avx512.cpp), with a 16-lane accumulator held as two 8-lane halves:
// each lane sees the same fused multiply-adds in the same order, and the
// lane reduction (upper 8 + lower 8, then 4, 2, 1) is the one
// _mm512_reduce_add_ps performs. So both levels return the same bits, and
// the goldens made on AVX-512 machines hold at their tolerances here too.
struct Acc16 {
  __m256 lo = _mm256_setzero_ps();
  __m256 hi = _mm256_setzero_ps();
  float reduce() const { return hsum(_mm256_add_ps(hi, lo)); }
};
inline Acc16 add16(const Acc16& a, const Acc16& b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }

constexpr int64_t kLanes16 = 16;
constexpr int64_t kStep = 4 * kLanes16;

template <typename Load>
inline void fma16(Acc16& acc, const Load& load, int64_t i) {
  acc.lo = _mm256_fmadd_ps(load.a(i), load.b(i), acc.lo);
  acc.hi = _mm256_fmadd_ps(load.a(i + kLanes), load.b(i + kLanes), acc.hi);
}

struct F32Pair {
  const float* pa;
  const float* pb;
  __m256 a(int64_t i) const { return _mm256_loadu_ps(pa + i); }
  __m256 b(int64_t i) const { return _mm256_loadu_ps(pb + i); }
};
struct F16Pair {
  const uint16_t* pa;
  const uint16_t* pb;
  __m256 a(int64_t i) const { return load_f16(pa + i); }
  __m256 b(int64_t i) const { return load_f16(pb + i); }
};

// Four 16-lane accumulators over blocks of 64, combined as (0+2)+(1+3).
template <typename Load>
inline float dot_blocks64(const Load& load, int64_t np) {
  Acc16 acc[4];
  for (int64_t i = 0; i < np; i += kStep) {
    for (int j = 0; j < 4; ++j) fma16(acc[j], load, i + j * kLanes16);
  }
  return add16(add16(acc[0], acc[2]), add16(acc[1], acc[3])).reduce();
}

// One 16-lane accumulator in k order (n a multiple of 16).
template <typename Load>
inline float dot_one16(const Load& load, int64_t n) {
  Acc16 acc;
  for (int64_t i = 0; i < n; i += kLanes16) fma16(acc, load, i);
  return acc.reduce();
}

float dot_f32_unrolled(const float* a, const float* b, int64_t n) {
  const int64_t np = n - n % kStep;
  float sum = np > 0 ? dot_blocks64(F32Pair{a, b}, np) : 0.0f;
  // The scalar tail as the AVX-512 table spells it: products of 16, then 8,
  // added in order; the last < 8 fused.
  int64_t i = np;
  alignas(32) float prod[kLanes16];
  for (; i + kLanes16 <= n; i += kLanes16) {
    _mm256_store_ps(prod, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    _mm256_store_ps(prod + kLanes, _mm256_mul_ps(_mm256_loadu_ps(a + i + kLanes), _mm256_loadu_ps(b + i + kLanes)));
    for (int64_t j = 0; j < kLanes16; ++j) sum += prod[j];
  }
  if (i + kLanes <= n) {
    _mm256_store_ps(prod, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (int64_t j = 0; j < kLanes; ++j) sum += prod[j];
    i += kLanes;
  }
  for (; i < n; ++i) sum = std::fma(a[i], b[i], sum);
  return sum;
}

float dot_f32(const float* a, const float* b, int64_t n) {
  if (n % kLanes16 != 0) return dot_f32_unrolled(a, b, n);
  return dot_one16(F32Pair{a, b}, n);
}

float dot_f16_unrolled(const uint16_t* a, const uint16_t* b, int64_t n) {
  const int64_t np = n - n % kStep;
  double sum = np > 0 ? dot_blocks64(F16Pair{a, b}, np) : 0.0;
  // Tail: exact f32 products (of f16 values), added in order in double.
  int64_t i = np;
  alignas(32) float prod[kLanes];
  for (; i + kLanes <= n; i += kLanes) {
    _mm256_store_ps(prod, _mm256_mul_ps(load_f16(a + i), load_f16(b + i)));
    for (float p : prod) sum += static_cast<double>(p);
  }
  for (; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(a[i]) * fp16_to_fp32(b[i]));
  return static_cast<float>(sum);
}

float dot_f16(const uint16_t* a, const uint16_t* b, int64_t n) {
  if (n % kLanes16 != 0) return dot_f16_unrolled(a, b, n);
  return dot_one16(F16Pair{a, b}, n);
}

// vdpbf16ps, lane by lane: a lane holds the pair (2l, 2l + 1); the products
// of bfloat16 values are exact in f32, and the odd product is added before
// the even one, each addition rounded. 16 lanes (32 values) per step, one
// accumulator, then the 16-lane reduction.
inline void dp_bf16_step(Acc16& acc, const uint16_t* a, const uint16_t* b) {
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  for (int half = 0; half < 2; ++half) {
    const __m256i wa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + half * 16));
    const __m256i wb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + half * 16));
    const __m256 odd = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_and_si256(wa, hi_mask)),
                                     _mm256_castsi256_ps(_mm256_and_si256(wb, hi_mask)));
    const __m256 even = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_slli_epi32(wa, 16)),
                                      _mm256_castsi256_ps(_mm256_slli_epi32(wb, 16)));
    __m256& lane = half == 0 ? acc.lo : acc.hi;
    lane = _mm256_add_ps(_mm256_add_ps(lane, odd), even);
  }
}

float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  constexpr int64_t kPairLanes = 32;
  Acc16 acc;
  int64_t i = 0;
  for (; i + kPairLanes <= n; i += kPairLanes) dp_bf16_step(acc, a + i, b + i);
  if (i < n) {
    alignas(32) uint16_t ta[kPairLanes] = {}, tb[kPairLanes] = {};
    for (int64_t j = 0; j < n - i; ++j) {
      ta[j] = a[i + j];
      tb[j] = b[i + j];
    }
    dp_bf16_step(acc, ta, tb);
  }
  return acc.reduce();
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
  for (int64_t i = 0; i < fast; i += kLanes16) {
    Acc16 v;
    v.lo = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax));
    v.hi = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + kLanes), vmax));
    _mm256_storeu_ps(x + i, v.lo);
    _mm256_storeu_ps(x + i + kLanes, v.hi);
    sum += static_cast<double>(v.reduce());
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

// a' = fma(a, c, -(b * s)), b' = fma(a, s, b * c) per pair, the scalar
// operations lane by lane (so every level gives the same bits): 8 pairs per
// step for the NeoX layout (stride 1), 4 per step for adjacent pairs
// (stride 2: a and b interleaved in one vector); std::fma is vfmadd here.
void rotate(float* a, float* b, const float* c, const float* s, int64_t n, int64_t stride) {
  int64_t i = 0;
  if (stride == 1) {
    for (; i + kLanes <= n; i += kLanes) {
      const __m256 x0 = _mm256_loadu_ps(a + i), x1 = _mm256_loadu_ps(b + i);
      const __m256 vc = _mm256_loadu_ps(c + i), vs = _mm256_loadu_ps(s + i);
      _mm256_storeu_ps(a + i, _mm256_fmsub_ps(x0, vc, _mm256_mul_ps(x1, vs)));
      _mm256_storeu_ps(b + i, _mm256_fmadd_ps(x0, vs, _mm256_mul_ps(x1, vc)));
    }
  } else if (stride == 2 && b == a + 1) {
    constexpr int64_t kPairs = kLanes / 2;
    const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    for (; i + kPairs <= n; i += kPairs) {
      const __m256 x = _mm256_loadu_ps(a + 2 * i);          // a0 b0 a1 b1 ...
      const __m256 xs = _mm256_permute_ps(x, 0xB1);          // b0 a0 b1 a1 ...
      const __m256 vc = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(c + i)), dup);
      const __m256 vs = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(s + i)), dup);
      const __m256 even = _mm256_fmsub_ps(x, vc, _mm256_mul_ps(xs, vs));  // a' in the a lanes
      const __m256 odd = _mm256_fmadd_ps(xs, vs, _mm256_mul_ps(x, vc));   // b' = fma(a, s, b c) in the b lanes
      _mm256_storeu_ps(a + 2 * i, _mm256_blend_ps(even, odd, 0xAA));
    }
  }
  for (; i < n; ++i) {
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
  static const VecOps ops{dot_f32,    dot_f16,     dot_f32_unrolled, dot_f16_unrolled, dot_bf16,
                          f32_to_f16, f16_to_f32,  f32_to_bf16,      axpy_f16,         softmax_exp,
                          silu,       rotate,      tile_f32,         tile_f16,         tile_bf16};
  return ops;
}

}  // namespace ferrite::cpu
