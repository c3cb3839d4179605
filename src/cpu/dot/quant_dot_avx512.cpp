// AVX-512 (VNNI) quantized dot products. vpdpbusd multiplies unsigned by
// signed bytes and adds groups of four into 32-bit lanes, so:
//   Q4_0: nibbles (0..15, unsigned) · q_a, minus 8 · sum(q_a)
//   Q8_0: |q_w| · (q_a with q_w's sign)
// Two blocks (64 values) per 512-bit step; one f32 FMA per block pair.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cmath>

#include "core/fp16.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/dot/quant_dot_iq.h"
#include "cpu/dot/quant_dot_k.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;
using quant::kQK;

constexpr float kQ8Max = 127.0f;

// Software prefetch distance along each weight row. A tile streams NR rows
// at once (NR interleaved streams of 18- or 34-byte blocks), which the
// hardware prefetchers follow poorly; fetching ~1 KiB ahead in every row
// keeps enough misses in flight for one core to reach the memory's rate.
constexpr int kPrefetchBytes = 1024;

inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0); }

size_t q8_0_row_bytes(int64_t k) { return static_cast<size_t>(k / kQK) * sizeof(BlockQ8_0); }

void quantize_q8_0(const float* x, void* dst, int64_t k) {
  auto* out = static_cast<BlockQ8_0*>(dst);
  const __m512 sign_off = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t b = 0; b < k / kQK; ++b) {
    const __m512 v0 = _mm512_loadu_ps(x + b * kQK);
    const __m512 v1 = _mm512_loadu_ps(x + b * kQK + 16);
    const __m512 a = _mm512_max_ps(_mm512_and_ps(v0, sign_off), _mm512_and_ps(v1, sign_off));
    const float amax = _mm512_reduce_max_ps(a);
    const float d = amax / kQ8Max;
    const float id = amax != 0.0f ? kQ8Max / amax : 0.0f;
    out[b].d = fp32_to_fp16(d);
    const __m512 vid = _mm512_set1_ps(id);
    // cvtps2dq rounds to nearest even (the default MXCSR mode).
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, vid));
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, vid));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs + 16), _mm512_cvtsepi32_epi8(q1));
  }
}

inline float hsum8(__m256 v) {
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// 32 unsigned nibbles of a Q4_0 block: elements 0..15 (low) then 16..31 (high).
inline __m256i unpack_q4(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i mask = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), mask), _mm_and_si128(raw, mask));
}

// Tiles of nr x nt outputs with one 8-lane accumulator per output, blocks
// in order; a single dot is the 1 x 1 tile, so tiles and dots agree exactly.
template <int NR, int NT>
void q4_0_tile(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  const __m256i ones = _mm256_set1_epi8(1);
  __m256 acc[NR][NT];
  for (int r = 0; r < NR; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < k / kQK; ++b) {
    __m256i qa[NT], sa8[NT];
    float da[NT];
    for (int t = 0; t < NT; ++t) {
      const BlockQ8_0& ab = reinterpret_cast<const BlockQ8_0*>(act + t * arb)[b];
      qa[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs));
      sa8[t] = _mm256_slli_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, qa[t]), 3);
      da[t] = _cvtsh_ss(ab.d);
    }
    for (int r = 0; r < NR; ++r) {
      const BlockQ4_0& wb = reinterpret_cast<const BlockQ4_0*>(w + r * wrb)[b];
      prefetch(&wb);
      const __m256i wv = unpack_q4(wb.qs);
      const float dw = _cvtsh_ss(wb.d);
      for (int t = 0; t < NT; ++t) {
        const __m256i s = _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), wv, qa[t]), sa8[t]);
        acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * da[t]), _mm256_cvtepi32_ps(s), acc[r][t]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = hsum8(acc[r][t]);
  }
}

template <int NR, int NT>
void q8_0_tile(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  __m256 acc[NR][NT];
  for (int r = 0; r < NR; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < k / kQK; ++b) {
    __m256i qa[NT];
    float da[NT];
    for (int t = 0; t < NT; ++t) {
      const BlockQ8_0& ab = reinterpret_cast<const BlockQ8_0*>(act + t * arb)[b];
      qa[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.qs));
      da[t] = _cvtsh_ss(ab.d);
    }
    for (int r = 0; r < NR; ++r) {
      const BlockQ8_0& wb = reinterpret_cast<const BlockQ8_0*>(w + r * wrb)[b];
      prefetch(&wb);
      const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs));
      const __m256i aw = _mm256_abs_epi8(qw);
      const float dw = _cvtsh_ss(wb.d);
      for (int t = 0; t < NT; ++t) {
        const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), aw, _mm256_sign_epi8(qa[t], qw));
        acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(dw * da[t]), _mm256_cvtepi32_ps(s), acc[r][t]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = hsum8(acc[r][t]);
  }
}

using TileFn = void (*)(const uint8_t*, size_t, const uint8_t*, size_t, int64_t, float*, int64_t);

template <int NR, int NT>
struct Q4_0Tile {
  static void run(const uint8_t* w, size_t wrb, const uint8_t* a, size_t arb, int64_t k, float* y, int64_t ys) {
    q4_0_tile<NR, NT>(w, wrb, a, arb, k, y, ys);
  }
};
template <int NR, int NT>
struct Q8_0Tile {
  static void run(const uint8_t* w, size_t wrb, const uint8_t* a, size_t arb, int64_t k, float* y, int64_t ys) {
    q8_0_tile<NR, NT>(w, wrb, a, arb, k, y, ys);
  }
};

template <template <int, int> class K>
TileFn pick(int64_t nr, int64_t nt) {
  static const TileFn table[4][4] = {
      {K<1, 1>::run, K<1, 2>::run, K<1, 3>::run, K<1, 4>::run},
      {K<2, 1>::run, K<2, 2>::run, K<2, 3>::run, K<2, 4>::run},
      {K<3, 1>::run, K<3, 2>::run, K<3, 3>::run, K<3, 4>::run},
      {K<4, 1>::run, K<4, 2>::run, K<4, 3>::run, K<4, 4>::run},
  };
  return table[nr - 1][nt - 1];
}

void tile_q4_0(const uint8_t* w, size_t wrb, int64_t nr, const uint8_t* a, size_t arb, int64_t nt, int64_t k, float* y,
               int64_t ys) {
  pick<Q4_0Tile>(nr, nt)(w, wrb, a, arb, k, y, ys);
}
void tile_q8_0(const uint8_t* w, size_t wrb, int64_t nr, const uint8_t* a, size_t arb, int64_t nt, int64_t k, float* y,
               int64_t ys) {
  pick<Q8_0Tile>(nr, nt)(w, wrb, a, arb, k, y, ys);
}

float dot_q4_0_q8_0(const void* w_row, const void* act_row, int64_t k) {
  float y;
  q4_0_tile<1, 1>(static_cast<const uint8_t*>(w_row), 0, static_cast<const uint8_t*>(act_row), 0, k, &y, 1);
  return y;
}

float dot_q8_0_q8_0(const void* w_row, const void* act_row, int64_t k) {
  float y;
  q8_0_tile<1, 1>(static_cast<const uint8_t*>(w_row), 0, static_cast<const uint8_t*>(act_row), 0, k, &y, 1);
  return y;
}

const QuantDot kQ4_0{ActQuant::Q8_0, q8_0_row_bytes, quantize_q8_0, dot_q4_0_q8_0, tile_q4_0};
const QuantDot kQ8_0{ActQuant::Q8_0, q8_0_row_bytes, quantize_q8_0, dot_q8_0_q8_0, tile_q8_0};

}  // namespace

const QuantDot* quant_dot_avx512(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return &kQ4_0;
    case TensorType::Q8_0:
      return &kQ8_0;
    default:
      if (const QuantDot* q = quant_dot_k_avx512(type)) return q;  // the K types (quant_dot_k_avx512.cpp)
      return quant_dot_iq_avx512(type);                            // IQ2_XXS (quant_dot_iq2_avx512.cpp)
  }
}

}  // namespace ferrite::cpu
