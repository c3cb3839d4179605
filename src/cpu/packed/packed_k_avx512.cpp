// AVX-512 VNNI kernels for packed Q4_K and Q5_K (layouts and formula in
// packed_k.h), one template: they differ only in the fifth bit of Q5_K's values.
// Per sub-block of 32 of a group super-block: 8 zmm of nibbles (16 rows x 4
// bytes each; Q5_K: plus 16 where bit sb of the matching qh byte is set, a
// vptestmb and a masked vpaddb), then per token 8 vpdpbusd with broadcast
// dwords of the token's Q8_K values give the 16 rows' sums in the 16 lanes
// (values 0..31 times int8: no saturation); vpmulld by the 16 sub-block
// scales, and the mins times the token's bsums, accumulate exactly in int32.
// The f32 finish per super-block is the reference's.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_K;
using quant::kQKK;

constexpr int kSubBlocks = 8;
constexpr int kSubLen = kQKK / kSubBlocks;
constexpr int kLanes = kSubLen / 4;  // 4-byte lanes per sub-block
constexpr int kLine = 64;
// Prefetch distance in group super-blocks (2304 or 2816 bytes), every line
// of them. 4 KiB ahead (half a pair of nibble lines and one line of fifth
// bits per sub-block) left 4 lines of each super-block to the hardware and
// one-token Q5_K at ~20 GB/s a core on Zen 5 (lab, 1 thread, 2048 x 4096:
// 265-315 us; 8 KiB ahead 177-200; two super-blocks, every line, 161-176).
constexpr int64_t kAheadBlocks = 2;
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

inline __m512i bcast32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// Q5_K: the fifth bit of lane j's values in sub-block sb (bit sb of its qh
// bytes) added to their nibbles w as 16.
inline __m512i with_fifth_bit(__m512i w, const uint8_t* gb, int j, __m512i bit_sb, __m512i sixteen) {
  const __m512i h = _mm512_loadu_si512(gb + kPackedQ5KQhOffset + j * kLine);
  return _mm512_mask_add_epi8(w, _mm512_test_epi8_mask(h, bit_sb), w, sixteen);
}

template <bool kFive, int NT>
void k45_group(const uint8_t* group, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  constexpr int64_t kBlockBytes = kFive ? kPackedQ5KBlockBytes : kPackedQ4KBlockBytes;
  constexpr int64_t kBlockLines = kBlockBytes / kLine;
  const BlockQ8_K* act[NT];
  for (int t = 0; t < NT; ++t) act[t] = reinterpret_cast<const BlockQ8_K*>(a.q8 + (t0 + t) * a.row_bytes);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i low6 = _mm512_set1_epi32(63);
  const __m128i nib = _mm_set1_epi8(0x0F);
  const __m512i sixteen = _mm512_set1_epi8(16);
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kBlockBytes;
    __m512i sumi[NT], summ[NT];
    for (int t = 0; t < NT; ++t) sumi[t] = summ[t] = _mm512_setzero_si512();
    for (int sb = 0; sb < kSubBlocks; ++sb) {
      const uint8_t* qs = gb + kPackedQ4KQsOffset + (sb / 2) * kLanes * kLine;
      // The lines of super-block b + kAheadBlocks, an eighth per sub-block.
      for (int64_t line = sb * kBlockLines / kSubBlocks; line < (sb + 1) * kBlockLines / kSubBlocks; ++line) {
        _mm_prefetch(reinterpret_cast<const char*>(gb) + kAheadBlocks * kBlockBytes + line * kLine, _MM_HINT_T0);
      }
      const __m512i bit_sb = _mm512_set1_epi8(static_cast<char>(1 << sb));
      __m512i w[kLanes];
      for (int j = 0; j < kLanes; ++j) {
        const __m512i raw = _mm512_loadu_si512(qs + j * kLine);
        w[j] = sb % 2 == 0 ? _mm512_and_si512(raw, low4) : _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
        if constexpr (kFive) w[j] = with_fifth_bit(w[j], gb, j, bit_sb, sixteen);
      }
      // 16 scales and mins of this sub-block as int32 lanes.
      const __m512i s = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + kPackedQ4KScOffset + sb * 16)));
      const __m512i sc = _mm512_and_si512(s, low6);
      __m128i mh = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(gb + kPackedQ4KMhiOffset + sb * 8));
      mh = _mm_unpacklo_epi64(_mm_and_si128(mh, nib), _mm_and_si128(_mm_srli_epi16(mh, 4), nib));
      const __m512i m = _mm512_or_si512(_mm512_srli_epi32(s, 6), _mm512_slli_epi32(_mm512_cvtepu8_epi32(mh), 2));
      for (int t = 0; t < NT; ++t) {
        const int8_t* aq = act[t][b].qs + sb * kSubLen;
        // Two independent vpdpbusd chains (latency, for few tokens), summed exactly.
        __m512i dot0 = _mm512_setzero_si512(), dot1 = _mm512_setzero_si512();
        for (int j = 0; j < kLanes / 2; ++j) {
          dot0 = _mm512_dpbusd_epi32(dot0, w[j], bcast32(aq + j * 4));
          dot1 = _mm512_dpbusd_epi32(dot1, w[j + kLanes / 2], bcast32(aq + (j + kLanes / 2) * 4));
        }
        const __m512i dot = _mm512_add_epi32(dot0, dot1);
        sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(dot, sc));
        const int32_t bs = act[t][b].bsums[2 * sb] + act[t][b].bsums[2 * sb + 1];
        summ[t] = _mm512_add_epi32(summ[t], _mm512_mullo_epi32(m, _mm512_set1_epi32(bs)));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
    const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kPackedQ4KDminOffset)));
    for (int t = 0; t < NT; ++t) {
      const __m512 ad = _mm512_set1_ps(act[t][b].d);
      // Explicitly rounded products: the compiler may not fuse them into an
      // FMA, so the sums stay bit-identical to the reference's.
      const __m512 p1 = _mm512_mul_round_ps(_mm512_mul_ps(d, ad), _mm512_cvtepi32_ps(sumi[t]), kRound);
      const __m512 p2 = _mm512_mul_round_ps(_mm512_mul_ps(dmin, ad), _mm512_cvtepi32_ps(summ[t]), kRound);
      acc[t] = _mm512_add_ps(acc[t], _mm512_sub_ps(p1, p2));
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ys, acc[t]);
}

template <bool kFive>
void k45_dispatch(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  static constexpr auto kFns = per_token_count([]<int NT>() { return &k45_group<kFive, NT>; });
  kFns[nt - 1](group, a, t0, y, ys);
}

}  // namespace

void packed_q4_k_avx512(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  k45_dispatch<false>(group, a, t0, nt, y, ys);
}
void packed_q5_k_avx512(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  k45_dispatch<true>(group, a, t0, nt, y, ys);
}

}  // namespace ferrite::cpu
