// AVX2 kernels for packed Q4_K and Q5_K (layouts and formula in
// packed_k.h), bit for bit the layouts' reference. A 16-row group is taken
// as two halves of 8 rows (one 32-byte half of each 64-byte line), 8 int32
// lanes = 8 rows. Per quarter of a sub-block (16 elements): 4 vectors of
// nibbles (Q5_K: plus the fifth bit from qh), built once for the up to 8
// tokens of a call, then per token 4 vpmaddubsw with broadcast dwords of its
// Q8_K values, added in int16 (4 x 2 x 31 x 127 < 2^15) and widened by
// vpmaddwd with the rows' 6-bit scales; the mins times the token's 32-sums
// go through vpmaddwd by pairs of sub-blocks. All integer sums are exact; the f32 finish per
// super-block is the reference's.
#include <immintrin.h>

#include <cstdint>

#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using avx2::bcast32;
using avx2::load256;
using quant::BlockQ8_K;
using quant::kQKK;

constexpr int kSubBlocks = 8;
constexpr int kSubLen = kQKK / kSubBlocks;
constexpr int kLanes = kSubLen / 4;  // 4-byte lanes per sub-block
constexpr int64_t kLine = 64;
constexpr int64_t kHalfRows = 8;
constexpr int kPrefetchBytes = 4096;
constexpr int64_t kChunk = kPackTokens;  // tokens per pass over the weights

// The 6-bit scales of sub-block sb for the 8 rows of `half`, each in both
// int16 halves of its row's lane (vpmaddwd's factor): the 16 rows' sc bytes
// broadcast, each row's byte picked into two int16s, its low 6 bits kept.
inline __m256i sub_block_scales(const uint8_t* gb, int sb, int64_t half) {
  const auto lane = [&](int j) { return static_cast<int>(0x80008000u | static_cast<uint32_t>(8 * half + j) * 0x00010001u); };
  const __m256i pick = _mm256_setr_epi32(lane(0), lane(1), lane(2), lane(3), lane(4), lane(5), lane(6), lane(7));
  const __m256i rows =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + kPackedQ4KScOffset + sb * kPackRows)));
  return _mm256_and_si256(_mm256_shuffle_epi8(rows, pick), _mm256_set1_epi16(63));
}

// The mins of one super-block: for each half and pair q of sub-blocks, the
// 8 rows' (m_2q, m_2q+1) as int16 pairs. Built for the 16 rows at once, as
// bytes: sub-block 2q in the low 128-bit lane, 2q+1 in the high one, the low
// 2 bits from the top of the sc bytes and the high 4 from the Mhi nibbles
// (rows 0-7 low, 8-15 high: spread over two quadwords, the second shifted).
// (One Scales per half cost a super-block's one-token product a fifth of its
// instructions: 8-bit lanes widened to 32 bits before any work.)
struct Mins {
  __m256i pair[2][kSubBlocks / 2];

  void load(const uint8_t* gb) {
    const __m256i spread = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 8,
                                            9, 10, 11, 12, 13, 14, 15);
    const __m256i nibble_shift = _mm256_setr_epi64x(0, 4, 0, 4);
    for (int q = 0; q < kSubBlocks / 2; ++q) {
      const __m256i sc = load256(gb + kPackedQ4KScOffset + 2 * q * kPackRows);
      const __m256i low2 = _mm256_and_si256(_mm256_srli_epi16(sc, 6), _mm256_set1_epi8(3));
      const __m256i hi = _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + kPackedQ4KMhiOffset + 2 * q * kHalfRows)));
      const __m256i high4 =
          _mm256_and_si256(_mm256_srlv_epi64(_mm256_shuffle_epi8(hi, spread), nibble_shift), _mm256_set1_epi8(0x0F));
      const __m256i m = _mm256_or_si256(low2, _mm256_slli_epi16(high4, 2));
      const __m128i even = _mm256_castsi256_si128(m);
      const __m128i odd = _mm256_extracti128_si256(m, 1);
      pair[0][q] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(even, odd));
      pair[1][q] = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(even, odd));
    }
  }
};

// A token's sub-block sums b_sb = bsums[2sb] + bsums[2sb + 1] (|b| <= 2 x
// 16 x 127, no saturation) as int16 pairs (b_2q, b_2q+1): pair q in the
// int32 element kPairLane[q] of the result.
inline __m256i bsum_pairs(const int16_t* bsums) {
  const __m256i b = _mm256_madd_epi16(load256(bsums), _mm256_set1_epi16(1));  // element sb: b_sb
  return _mm256_packs_epi32(b, b);  // per 128-bit half: b0 b1 b2 b3 b0 b1 b2 b3 | b4 .. b7 b4 .. b7
}
constexpr int kPairLane[kSubBlocks / 2] = {0, 1, 4, 5};

// The 4 lanes (16 elements) 4 * hs .. 4 * hs + 3 of sub-block sb for 8 rows,
// as unsigned values (Q5_K: with their fifth bit).
template <bool kFive>
inline void quarter_values(const uint8_t* gb, int64_t half, int sb, int hs, __m256i* w) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const uint8_t* qs = gb + kPackedQ4KQsOffset + ((sb / 2) * kLanes + 4 * hs) * kLine + half * (kLine / 2);
  for (int j = 0; j < 4; ++j) {
    const __m256i raw = load256(qs + j * kLine);
    w[j] = _mm256_and_si256(sb % 2 == 0 ? raw : _mm256_srli_epi16(raw, 4), low4);
    if constexpr (kFive) {
      // Bit sb of each qh byte to bit 4 (16-bit shifts: what crosses bytes is masked off).
      const __m256i h = load256(gb + kPackedQ5KQhOffset + (4 * hs + j) * kLine + half * (kLine / 2));
      // Above bit 4 the bit is isolated and clamped to 16 (no shift: the
      // shift units are the busy ones, with the odd nibbles').
      const __m256i sixteen = _mm256_set1_epi8(0x10);
      __m256i five;
      if (sb < 4) {
        five = _mm256_and_si256(_mm256_slli_epi16(h, 4 - sb), sixteen);
      } else if (sb == 4) {
        five = _mm256_and_si256(h, sixteen);
      } else {
        five = _mm256_min_epu8(_mm256_and_si256(h, _mm256_set1_epi8(static_cast<char>(1 << sb))), sixteen);
      }
      w[j] = _mm256_or_si256(w[j], five);
    }
  }
}

// NT tokens times H 8-row halves of a group, from half h0. Per quarter of a
// sub-block (16 elements: 4 vectors, unpacked once for all NT tokens) and
// token: 4 vpmaddubsw added in int16 (4 x 2 x 31 x 127 < 2^15), one
// vpmaddwd by the rows' scale. With NT = 8 the 8 int32 sums and the 4 weight
// vectors stay in registers for Q4_K (avx2::settle); Q5_K's fifth bits take
// registers too, and its sums go through the stack. One token takes both halves per pass (H = 2):
// with one half per pass, the second half found its lines already in L2 and
// the memory sat idle for half of a decode step (Zen 3, 2 threads: 7B
// Q4_K_M decode at 49% of the read probe).
template <bool kFive, int NT, int H>
void k45_halves(const uint8_t* group, int64_t h0, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  constexpr int64_t kBlockBytes = kFive ? kPackedQ5KBlockBytes : kPackedQ4KBlockBytes;
  const uint8_t* act0 = a.q8 + t0 * a.row_bytes;
  const auto act = [&](int t, int64_t b) {
    return reinterpret_cast<const BlockQ8_K*>(act0 + t * a.row_bytes) + b;
  };
  __m256 acc[H][NT];
  for (auto& row : acc) {
    for (auto& v : row) v = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kBlockBytes;
    Mins mins;
    mins.load(gb);
    if constexpr (NT > 1) avx2::in_memory(mins);  // decode keeps its schedule
    __m256i sumi[H][NT];
    for (auto& row : sumi) {
      for (auto& v : row) v = _mm256_setzero_si256();
    }
    // Unrolled: each sub-block's shifts and line offsets are constants.
#pragma GCC unroll 8
    for (int sb = 0; sb < kSubBlocks; ++sb) {
      avx2::prefetch_part<kBlockBytes, kSubBlocks>(gb + kPrefetchBytes, sb);
#pragma GCC unroll 2
      for (int hs = 0; hs < 2; ++hs) {
        for (int h = 0; h < H; ++h) {
          const __m256i sc = sub_block_scales(gb, sb, h0 + h);
          __m256i w[4];
          quarter_values<kFive>(gb, h0 + h, sb, hs, w);
          for (int t = 0; t < NT; ++t) {
            const int8_t* aq = act(t, b)->qs + sb * kSubLen + 16 * hs;
            __m256i s16 = _mm256_maddubs_epi16(w[0], bcast32(aq));
            for (int j = 1; j < 4; ++j) s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(w[j], bcast32(aq + 4 * j)));
            sumi[h][t] = _mm256_add_epi32(sumi[h][t], _mm256_madd_epi16(s16, sc));
            if constexpr (NT > 1) avx2::settle(sumi[h][t]);
          }
        }
      }
    }
    for (int h = 0; h < H; ++h) {
      const __m256 d = avx2::load8_f16(gb + (h0 + h) * kHalfRows * 2);
      const __m256 dmin = avx2::load8_f16(gb + kPackedQ4KDminOffset + (h0 + h) * kHalfRows * 2);
      for (int t = 0; t < NT; ++t) {
        // m_sb * (bsums of its two 16s), two sub-blocks per vpmaddwd.
        const __m256i pairs = bsum_pairs(act(t, b)->bsums);
        __m256i summ = _mm256_setzero_si256();
        for (int q = 0; q < kSubBlocks / 2; ++q) {
          summ = _mm256_add_epi32(summ, _mm256_madd_epi16(mins.pair[h0 + h][q], _mm256_permutevar8x32_epi32(pairs, _mm256_set1_epi32(kPairLane[q]))));
        }
        const __m256 ad = _mm256_set1_ps(act(t, b)->d);
        const __m256 p1 = avx2::pinned(_mm256_mul_ps(_mm256_mul_ps(d, ad), _mm256_cvtepi32_ps(sumi[h][t])));
        const __m256 p2 = avx2::pinned(_mm256_mul_ps(_mm256_mul_ps(dmin, ad), _mm256_cvtepi32_ps(summ)));
        acc[h][t] = _mm256_add_ps(acc[h][t], _mm256_sub_ps(p1, p2));
      }
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ys + (h0 + h) * kHalfRows, acc[h][t]);
  }
}

template <bool kFive>
void group_kernel(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  run_halves<kChunk>([]<int NT, int H>() { return &k45_halves<kFive, NT, H>; }, group, a, t0, nt, y, ys);
}

}  // namespace

void packed_q4_k_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  group_kernel<false>(group, a, t0, nt, y, ys);
}
void packed_q5_k_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  group_kernel<true>(group, a, t0, nt, y, ys);
}

}  // namespace ferrite::cpu
