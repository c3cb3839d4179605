// AVX-512 VNNI kernels for packed weights (packed.h, packed_matmul.h).
// Per block of a 16-row group: the 16 rows' values are loaded once (2 or 4
// zmm loads; Q4_0 nibbles split into low and high halves), then for each
// token 8 vpdpbusd with a broadcast dword of the token's block give the
// 16 rows' int32 sums in the 16 lanes, started from -offset * sum(a); one
// convert and one FMA with the 16 scales times the token's scale finish the
// block. No horizontal sums: the accumulator is the output.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "cpu/packed/packed.h"
#include "cpu/packed/packed_matmul.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_0;
using quant::kQK;

constexpr int64_t kScaleBytes = kPackRows * 2;
constexpr int64_t kActQsOffset = 2;  // BlockQ8_0: f16 d, then 32 int8

// Bytes ahead of the current block the Q8_0 weights are prefetched.
constexpr int kPrefetchBytes = 2048;
// Q4_0 twice as far (14 group blocks): one-token Q4_0 decodes a block in
// half Q8_0's time, and 2 KiB ahead left it waiting on memory (Zen 5, 1B
// model, 2 threads, 3 rounds: tg64 61.7-65.2 t/s, 4 KiB 70.1-71.6, 6 KiB 64.1-70.7).
constexpr int kQ4PrefetchBytes = 4096;

inline __m512i bcast32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// Q4_0: 4 loads of 64 bytes per group block, lanes j = 0..3 hold elements
// 4j..4j+3 (low nibbles) and 16+4j..16+4j+3 (high nibbles).
template <int NT>
void q4_0_group(const uint8_t* group, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  constexpr int64_t kGroupBlock = kScaleBytes + kPackRows * kQK / 2;
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const uint8_t* act = a.q8 + t0 * a.row_bytes;
  const float* ad = a.d + t0 * a.n_blocks;
  const int32_t* as = a.sum + t0 * a.n_blocks;
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kGroupBlock;
    for (int64_t line = 0; line < kGroupBlock; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(gb) + kQ4PrefetchBytes + line, _MM_HINT_T0);
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
    __m512i lo[4], hi[4];
    for (int j = 0; j < 4; ++j) {
      const __m512i v = _mm512_loadu_si512(gb + kScaleBytes + 64 * j);
      lo[j] = _mm512_and_si512(v, m4);
      hi[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    }
    for (int t = 0; t < NT; ++t) {
      const int8_t* qa = reinterpret_cast<const int8_t*>(act + t * a.row_bytes + b * sizeof(BlockQ8_0) + kActQsOffset);
      __m512i s = _mm512_set1_epi32(-8 * as[t * a.n_blocks + b]);
      for (int j = 0; j < 4; ++j) {
        s = _mm512_dpbusd_epi32(s, lo[j], bcast32(qa + 4 * j));
        s = _mm512_dpbusd_epi32(s, hi[j], bcast32(qa + kQK / 2 + 4 * j));
      }
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(ad[t * a.n_blocks + b]));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), scale, acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ys, acc[t]);
}

// Q8_0: 8 loads of 64 bytes per group block (values + 128), lane j holds
// elements 4j..4j+3.
template <int NT>
void q8_0_group(const uint8_t* group, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  constexpr int64_t kGroupBlock = kScaleBytes + kPackRows * kQK;
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const uint8_t* act = a.q8 + t0 * a.row_bytes;
  const float* ad = a.d + t0 * a.n_blocks;
  const int32_t* as = a.sum + t0 * a.n_blocks;
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kGroupBlock;
    for (int64_t line = 0; line < kGroupBlock; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(gb) + kPrefetchBytes + line, _MM_HINT_T0);
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
    __m512i w[8];
    for (int j = 0; j < 8; ++j) w[j] = _mm512_loadu_si512(gb + kScaleBytes + 64 * j);
    for (int t = 0; t < NT; ++t) {
      const int8_t* qa = reinterpret_cast<const int8_t*>(act + t * a.row_bytes + b * sizeof(BlockQ8_0) + kActQsOffset);
      __m512i s = _mm512_set1_epi32(-128 * as[t * a.n_blocks + b]);
      for (int j = 0; j < 8; ++j) s = _mm512_dpbusd_epi32(s, w[j], bcast32(qa + 4 * j));
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(ad[t * a.n_blocks + b]));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), scale, acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ys, acc[t]);
}

template <template <int> class K>
void dispatch(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  static constexpr auto kTable = per_token_count([]<int NT>() { return &K<NT>::run; });
  kTable[nt - 1](group, a, t0, y, ys);
}

template <int NT>
struct Q4 {
  static void run(const uint8_t* g, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
    q4_0_group<NT>(g, a, t0, y, ys);
  }
};
template <int NT>
struct Q8 {
  static void run(const uint8_t* g, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
    q8_0_group<NT>(g, a, t0, y, ys);
  }
};

}  // namespace

PackedKernel packed_kernel_avx512(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return dispatch<Q4>;
    case TensorType::Q8_0:
      return dispatch<Q8>;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
