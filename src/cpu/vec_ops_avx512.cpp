// AVX-512 paths (F/BW/VL + BF16). Tails use masked loads, so any n is
// accepted without a scalar remainder loop.
// GCC 12 flags the _mm512_undefined_* placeholders inside its own
// conversion intrinsics as uninitialised; the warning is a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cmath>

#include "core/fp16.h"
#include "cpu/fast_exp.h"
#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kLanes = 16;

inline __mmask16 tail_mask(int64_t left) { return static_cast<__mmask16>((1u << left) - 1u); }

inline __m512 load_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 load_f16_masked(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

// Summation order (it decides the rounding, and with it how closely we
// reproduce llama.cpp): lengths that are a multiple of 16 use one 16-lane
// accumulator in k order, then a lane reduction (the order of llama.cpp's
// tiled GEMM); other lengths use four accumulators over blocks of 64,
// combined as (0+2)+(1+3), and a scalar tail (llama.cpp's vector dot).
constexpr int64_t kStep = 4 * kLanes;

inline float reduce4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a2), _mm512_add_ps(a1, a3)));
}

float dot_f32_unrolled(const float* a, const float* b, int64_t n) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  const int64_t np = n - n % kStep;
  for (int64_t i = 0; i < np; i += kStep) {
    for (int j = 0; j < 4; ++j) {
      acc[j] = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + j * kLanes), _mm512_loadu_ps(b + i + j * kLanes), acc[j]);
    }
  }
  float sum = np > 0 ? reduce4(acc[0], acc[1], acc[2], acc[3]) : 0.0f;
  // The scalar tail `sum += a[i] * b[i]` as an optimising compiler builds it
  // (and as llama.cpp's binary computes it): products of 16, then 8, in
  // vectors, added in order; the last < 8 fused. Spelled out so that every
  // optimisation level gives the same bits.
  int64_t i = np;
  alignas(64) float prod[kLanes];
  for (; i + kLanes <= n; i += kLanes) {
    _mm512_store_ps(prod, _mm512_mul_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
    for (int64_t j = 0; j < kLanes; ++j) sum += prod[j];
  }
  if (i + kLanes / 2 <= n) {
    _mm256_store_ps(prod, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (int64_t j = 0; j < kLanes / 2; ++j) sum += prod[j];
    i += kLanes / 2;
  }
  for (; i < n; ++i) sum = std::fma(a[i], b[i], sum);
  return sum;
}

float dot_f32(const float* a, const float* b, int64_t n) {
  if (n % kLanes != 0) return dot_f32_unrolled(a, b, n);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += kLanes) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
  return _mm512_reduce_add_ps(acc);
}

float dot_f16_unrolled(const uint16_t* a, const uint16_t* b, int64_t n) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  const int64_t np = n - n % kStep;
  for (int64_t i = 0; i < np; i += kStep) {
    for (int j = 0; j < 4; ++j) {
      acc[j] = _mm512_fmadd_ps(load_f16(a + i + j * kLanes), load_f16(b + i + j * kLanes), acc[j]);
    }
  }
  double sum = np > 0 ? reduce4(acc[0], acc[1], acc[2], acc[3]) : 0.0;
  // Tail: exact f32 products (of f16 values), added in order in double.
  for (int64_t i = np; i < n; i += kLanes) {
    const int64_t left = n - i < kLanes ? n - i : kLanes;
    const __mmask16 m = tail_mask(left);
    alignas(64) float prod[kLanes];
    _mm512_store_ps(prod, _mm512_mul_ps(load_f16_masked(a + i, m), load_f16_masked(b + i, m)));
    for (int64_t j = 0; j < left; ++j) sum += static_cast<double>(prod[j]);
  }
  return static_cast<float>(sum);
}

float dot_f16(const uint16_t* a, const uint16_t* b, int64_t n) {
  if (n % kLanes != 0) return dot_f16_unrolled(a, b, n);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += kLanes) acc = _mm512_fmadd_ps(load_f16(a + i), load_f16(b + i), acc);
  return _mm512_reduce_add_ps(acc);
}

// 32 bf16 pairs per instruction: vdpbf16ps multiplies exactly and adds in
// f32. Multiples of 32 use one accumulator (llama.cpp's tiled GEMM order).
float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  constexpr int64_t kPairLanes = 32;
  __m512 acc0 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + kPairLanes <= n; i += kPairLanes) {
    acc0 = _mm512_dpbf16_ps(acc0, (__m512bh)_mm512_loadu_si512(a + i), (__m512bh)_mm512_loadu_si512(b + i));
  }
  if (i < n) {
    const __mmask32 m = static_cast<__mmask32>((1u << (n - i)) - 1u);
    acc0 = _mm512_dpbf16_ps(acc0, (__m512bh)_mm512_maskz_loadu_epi16(m, a + i),
                            (__m512bh)_mm512_maskz_loadu_epi16(m, b + i));
  }
  return _mm512_reduce_add_ps(acc0);
}

void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT));
  }
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) _mm512_storeu_ps(y + i, load_f16(x + i));
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, load_f16_masked(x + i, m));
  }
}

void f32_to_bf16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i)));
  }
  for (; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
}

void axpy_f16(float a, const uint16_t* x, float* y, int64_t n) {
  const __m512 va = _mm512_set1_ps(a);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, load_f16(x + i), _mm512_loadu_ps(y + i)));
  }
  if (i < n) {
    const __mmask16 m = tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, load_f16_masked(x + i, m), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

// fast_exp lane-wise; vscalefps applies 2^n. Lanes with |n| > 192 (results
// 0 or inf) and NaN are fixed up from the scalar definition.
inline __m512 exp16(__m512 x) {
  using namespace fast_exp;
  const __m512 shift = _mm512_set1_ps(kShift);
  const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), shift);
  const __m512 n = _mm512_sub_ps(z, shift);
  const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x));
  const __m512 u = _mm512_mul_ps(b, b);
  const __m512 j = _mm512_fmadd_ps(
      _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(kP5), b, _mm512_set1_ps(kP4)), u,
                      _mm512_fmadd_ps(_mm512_set1_ps(kP3), b, _mm512_set1_ps(kP2))),
      u, _mm512_fmadd_ps(_mm512_set1_ps(kP1), b, _mm512_set1_ps(1.0f)));
  __m512 r = _mm512_scalef_ps(j, n);
  const __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(kMaxExponent), _CMP_NLE_UQ);
  if (big != 0) {
    alignas(64) float xs[16], rs[16];
    _mm512_store_ps(xs, x);
    _mm512_store_ps(rs, r);
    for (int i = 0; i < 16; ++i) {
      if ((big >> i) & 1) rs[i] = exp_ref(xs[i]);
    }
    r = _mm512_load_ps(rs);
  }
  return r;
}

double softmax_exp(float* x, int64_t n, float max) {
  const int64_t fast = n - n % kExpGroup;
  double sum = 0.0;
  const __m512 vmax = _mm512_set1_ps(max);
  for (int64_t i = 0; i < fast; i += kLanes) {
    const __m512 v = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vmax));
    _mm512_storeu_ps(x + i, v);
    sum += static_cast<double>(_mm512_reduce_add_ps(v));
  }
  for (int64_t i = fast; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  return sum;
}

void silu(const float* x, float* y, int64_t n) {
  const int64_t fast = n - n % kExpGroup;
  for (int64_t i = 0; i < fast; i += kLanes) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), v));
    _mm512_storeu_ps(y + i, _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), e)));
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


// Register-blocked tiles: up to 4 rows x 4 tokens, one 16-lane accumulator
// per output (so each output is summed exactly as dot_* sums it), weights
// and activations converted once per step and reused across the tile.
struct LoadF32 {
  const float* p;
  int64_t stride;
  __m512 operator()(int j, int64_t i) const { return _mm512_loadu_ps(p + j * stride + i); }
  void prefetch(int j, int64_t i) const { _mm_prefetch(reinterpret_cast<const char*>(p + j * stride + i), _MM_HINT_T0); }
};
struct LoadF16 {
  const uint16_t* p;
  int64_t stride;
  __m512 operator()(int j, int64_t i) const { return load_f16(p + j * stride + i); }
  void prefetch(int j, int64_t i) const { _mm_prefetch(reinterpret_cast<const char*>(p + j * stride + i), _MM_HINT_T0); }
};

// Prefetch distance along each weight row (elements): a tile streams NR
// rows at once, which the hardware prefetchers follow poorly (an f16 row
// of 2048 is one 4 KiB page, and they stop at page ends).
constexpr int64_t kPrefetchElems = 512;

template <int NR, int NT, typename Load>
inline void tile_kernel(const Load& lw, const Load& la, int64_t n, float* y, int64_t ys) {
  __m512 acc[NR][NT];
  for (int r = 0; r < NR; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < n; i += kLanes) {
    __m512 av[NT];
    for (int t = 0; t < NT; ++t) av[t] = la(t, i);
    for (int r = 0; r < NR; ++r) {
      lw.prefetch(r, i + kPrefetchElems);
      const __m512 wv = lw(r, i);
      for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_fmadd_ps(wv, av[t], acc[r][t]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

template <int NR, typename Load>
inline void tile_rows(int64_t nt, const Load& lw, const Load& la, int64_t n, float* y, int64_t ys) {
  switch (nt) {
    case 4:
      return tile_kernel<NR, 4>(lw, la, n, y, ys);
    case 3:
      return tile_kernel<NR, 3>(lw, la, n, y, ys);
    case 2:
      return tile_kernel<NR, 2>(lw, la, n, y, ys);
    default:
      return tile_kernel<NR, 1>(lw, la, n, y, ys);
  }
}

template <typename Load>
inline void tile_any(int64_t nr, int64_t nt, const Load& lw, const Load& la, int64_t n, float* y, int64_t ys) {
  switch (nr) {
    case 4:
      return tile_rows<4>(nt, lw, la, n, y, ys);
    case 3:
      return tile_rows<3>(nt, lw, la, n, y, ys);
    case 2:
      return tile_rows<2>(nt, lw, la, n, y, ys);
    default:
      return tile_rows<1>(nt, lw, la, n, y, ys);
  }
}

void tile_f32(const float* w, int64_t ws, int64_t nr, const float* a, int64_t as, int64_t nt, int64_t n, float* y,
              int64_t ys) {
  if (n % kLanes != 0) return tile_by_dots(dot_f32, w, ws, nr, a, as, nt, n, y, ys);
  tile_any(nr, nt, LoadF32{w, ws}, LoadF32{a, as}, n, y, ys);
}

void tile_f16(const uint16_t* w, int64_t ws, int64_t nr, const uint16_t* a, int64_t as, int64_t nt, int64_t n,
              float* y, int64_t ys) {
  if (n % kLanes != 0) return tile_by_dots(dot_f16, w, ws, nr, a, as, nt, n, y, ys);
  tile_any(nr, nt, LoadF16{w, ws}, LoadF16{a, as}, n, y, ys);
}

void tile_bf16(const uint16_t* w, int64_t ws, int64_t nr, const uint16_t* a, int64_t as, int64_t nt, int64_t n,
               float* y, int64_t ys) {
  tile_by_dots(dot_bf16, w, ws, nr, a, as, nt, n, y, ys);
}

}  // namespace

const VecOps& vec_ops_avx512() {
  static const VecOps ops{dot_f32,     dot_f16,          dot_f32_unrolled, dot_f16_unrolled, dot_bf16,
                          f32_to_f16,  f16_to_f32,       f32_to_bf16,      axpy_f16,         softmax_exp,
                          silu,        rotate,           tile_f32,         tile_f16,         tile_bf16};
  return ops;
}

}  // namespace ferrite::cpu
