// AVX-512 VNNI kernels for packed weights (packed.h, packed_matmul.h).
// Per block of a 16-row group: the 16 rows' values are loaded once (2 or 4
// zmm loads; Q4_0 nibbles split into low and high halves), then for each
// token 8 vpdpbusd with a broadcast dword of the token's block give the
// 16 rows' int32 sums in the 16 lanes, started from -offset * sum(a); one
// convert and one FMA with the 16 scales times the token's scale finish the
// block. No horizontal sums: the accumulator is the output. Prefill takes
// two adjacent groups per call (packed_pair_kernel_avx512), each broadcast
// serving both.
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

// Fully unrolled token and value loops: every token's sums and accumulator
// stay in registers, and the tokens' independent vpdpbusd chains are
// interleaved in program order (left to gcc, the token loop stayed a loop
// with the accumulators on the stack; alone, unrolling it gained 2-3 points
// of the peak on Zen 5, sharing the broadcasts between two groups 10-15).
#define FERRITE_TOKENS _Pragma("GCC unroll 16")

// One block's int32 sums of NT tokens times the 16 row scales and each
// token's block scale (d: token 0's, n_blocks apart), added to acc.
template <int NT>
inline void finish_block(const uint8_t* gb, const float* d, int64_t n_blocks, const __m512i* s, __m512* acc) {
  const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
  FERRITE_TOKENS for (int t = 0; t < NT; ++t) {
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[t]), _mm512_mul_ps(dw, _mm512_set1_ps(d[t * n_blocks])), acc[t]);
  }
}

// Q4_0: 4 loads of 64 bytes per group block, lanes j = 0..3 hold elements
// 4j..4j+3 (low nibbles) and 16+4j..16+4j+3 (high nibbles). G adjacent
// groups per call, as q8_0_groups below.
template <int NT, int G>
void q4_0_groups(const uint8_t* group, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  constexpr int64_t kGroupBlock = kScaleBytes + kPackRows * kQK / 2;
  const int64_t group_bytes = a.n_blocks * kGroupBlock;
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512 acc[G][NT];
  FERRITE_TOKENS for (int g = 0; g < G; ++g) {
    FERRITE_TOKENS for (int t = 0; t < NT; ++t) acc[g][t] = _mm512_setzero_ps();
  }
  const uint8_t* act = a.q8 + t0 * a.row_bytes + kActQsOffset;
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kGroupBlock;
    FERRITE_TOKENS for (int g = 0; g < G; ++g) {
      for (int64_t line = 0; line < kGroupBlock; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(gb + g * group_bytes) + kQ4PrefetchBytes + line, _MM_HINT_T0);
      }
    }
    const int8_t* qa = reinterpret_cast<const int8_t*>(act + b * sizeof(BlockQ8_0));
    __m512i s[G][NT];
    FERRITE_TOKENS for (int t = 0; t < NT; ++t) {
      s[0][t] = _mm512_set1_epi32(-8 * a.sum[(t0 + t) * a.n_blocks + b]);
      if constexpr (G == 2) s[1][t] = s[0][t];
    }
    FERRITE_TOKENS for (int j = 0; j < 4; ++j) {
      __m512i lo[G], hi[G];
      FERRITE_TOKENS for (int g = 0; g < G; ++g) {
        const __m512i v = _mm512_loadu_si512(gb + g * group_bytes + kScaleBytes + 64 * j);
        lo[g] = _mm512_and_si512(v, m4);
        hi[g] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      }
      FERRITE_TOKENS for (int t = 0; t < NT; ++t) {
        const __m512i xl = bcast32(qa + t * a.row_bytes + 4 * j), xh = bcast32(qa + t * a.row_bytes + kQK / 2 + 4 * j);
        FERRITE_TOKENS for (int g = 0; g < G; ++g) {
          s[g][t] = _mm512_dpbusd_epi32(s[g][t], lo[g], xl);
          s[g][t] = _mm512_dpbusd_epi32(s[g][t], hi[g], xh);
        }
      }
    }
    FERRITE_TOKENS for (int g = 0; g < G; ++g) {
      finish_block<NT>(gb + g * group_bytes, a.d + t0 * a.n_blocks + b, a.n_blocks, s[g], acc[g]);
    }
  }
  FERRITE_TOKENS for (int g = 0; g < G; ++g) {
    FERRITE_TOKENS for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ys + g * kPackRows, acc[g][t]);
  }
}

// Q8_0: 8 loads of 64 bytes per group block (values + 128), lane j holds
// elements 4j..4j+3. G adjacent groups (1 or 2) per call: with two, each
// broadcast of a token's 4 bytes serves two vpdpbusd (one per group), as
// the BF16 pair kernel does (packed_float_avx512.cpp); with one group the
// broadcasts, not the vpdpbusd, are the limit.
template <int NT, int G>
void q8_0_groups(const uint8_t* group, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  constexpr int64_t kGroupBlock = kScaleBytes + kPackRows * kQK;
  const int64_t group_bytes = a.n_blocks * kGroupBlock;
  __m512 acc[G][NT];
  FERRITE_TOKENS for (int g = 0; g < G; ++g) {
    FERRITE_TOKENS for (int t = 0; t < NT; ++t) acc[g][t] = _mm512_setzero_ps();
  }
  const uint8_t* act = a.q8 + t0 * a.row_bytes + kActQsOffset;
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kGroupBlock;
    FERRITE_TOKENS for (int g = 0; g < G; ++g) {
      for (int64_t line = 0; line < kGroupBlock; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(gb + g * group_bytes) + kPrefetchBytes + line, _MM_HINT_T0);
      }
    }
    const int8_t* qa = reinterpret_cast<const int8_t*>(act + b * sizeof(BlockQ8_0));
    __m512i s[G][NT];
    FERRITE_TOKENS for (int t = 0; t < NT; ++t) {
      s[0][t] = _mm512_set1_epi32(-128 * a.sum[(t0 + t) * a.n_blocks + b]);
      if constexpr (G == 2) s[1][t] = s[0][t];
    }
    FERRITE_TOKENS for (int j = 0; j < 8; ++j) {
      __m512i w[G];
      FERRITE_TOKENS for (int g = 0; g < G; ++g) w[g] = _mm512_loadu_si512(gb + g * group_bytes + kScaleBytes + 64 * j);
      FERRITE_TOKENS for (int t = 0; t < NT; ++t) {
        const __m512i x = bcast32(qa + t * a.row_bytes + 4 * j);
        FERRITE_TOKENS for (int g = 0; g < G; ++g) s[g][t] = _mm512_dpbusd_epi32(s[g][t], w[g], x);
      }
    }
    FERRITE_TOKENS for (int g = 0; g < G; ++g) {
      finish_block<NT>(gb + g * group_bytes, a.d + t0 * a.n_blocks + b, a.n_blocks, s[g], acc[g]);
    }
  }
  FERRITE_TOKENS for (int g = 0; g < G; ++g) {
    FERRITE_TOKENS for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ys + g * kPackRows, acc[g][t]);
  }
}

// Tokens per call of the two-group kernels: their 2 x 4 sums and 2 x 4
// accumulators stay in registers.
constexpr int64_t kPairTokens = 4;

// One group per call (any count of tokens up to kPackTokens), or two,
// kPairTokens at a time.
template <int G>
void q4_0_calls(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  run_token_chunks<G == 1 ? kPackTokens : kPairTokens>([]<int NT>() { return &q4_0_groups<NT, G>; }, group, a, t0,
                                                         nt, y, ys);
}
template <int G>
void q8_0_calls(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  run_token_chunks<G == 1 ? kPackTokens : kPairTokens>([]<int NT>() { return &q8_0_groups<NT, G>; }, group, a, t0,
                                                         nt, y, ys);
}

}  // namespace

PackedKernel packed_kernel_avx512(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return q4_0_calls<1>;
    case TensorType::Q8_0:
      return q8_0_calls<1>;
    default:
      return nullptr;
  }
}

PackedKernel packed_pair_kernel_avx512(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return q4_0_calls<2>;
    case TensorType::Q8_0:
      return q8_0_calls<2>;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
