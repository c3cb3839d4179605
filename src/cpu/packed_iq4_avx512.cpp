// AVX-512 VNNI kernel for packed IQ4_XS (layout and formula in packed_k.h),
// bit for bit the layout's reference. Per sub-block of 32 of a group
// super-block: the 4 lines of nibbles (16 rows x 4 bytes each) give 8 zmm of
// values through vpshufb on the 16-entry table, biased by 128 to be unsigned
// (1..241) for vpdpbusd; per token 8 vpdpbusd with broadcast dwords of the
// token's Q8_K values give the 16 rows' biased sums in the 16 lanes, and
// 128 x the sub-block's activation sum (its two bsums) comes off exactly.
// Then vpmulld by the rows' scales (ls - 32) and int32 accumulation: every
// integer is the reference's. The f32 finish per super-block is the
// reference's, the products explicitly rounded so that none is fused.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "cpu/packed.h"
#include "cpu/packed_k.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_K;

constexpr int kSubBlocks = 8;
constexpr int kSubLen = 32;
constexpr int64_t kLine = 64;       // 4 bytes of each of the 16 rows
constexpr int kSubLines = 4;        // lines of one sub-block (16 bytes = 32 nibbles per row)
constexpr int kPrefetchBytes = 4096;
constexpr int kBias = 128;          // value + 128: unsigned for vpdpbusd
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

inline __m512i bcast32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// The 16 rows' sub-block scales ls - 32 as int32 lanes.
inline __m512i sub_block_scales(const uint8_t* gb, __m512i sh, int ib) {
  const __m512i sl = _mm512_cvtepu8_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + kPackedIq4XsScalesLOffset + (ib / 2) * kPackRows)));
  const __m512i lo = _mm512_and_si512(_mm512_srli_epi32(sl, 4 * (ib % 2)), _mm512_set1_epi32(0x0F));
  const __m512i hi = _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(sh, 2 * ib), _mm512_set1_epi32(3)), 4);
  return _mm512_sub_epi32(_mm512_or_si512(lo, hi), _mm512_set1_epi32(32));
}

template <int NT>
void iq4_xs_group(const uint8_t* group, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  const BlockQ8_K* act[NT];
  for (int t = 0; t < NT; ++t) act[t] = reinterpret_cast<const BlockQ8_K*>(a.q8 + (t0 + t) * a.row_bytes);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i table = _mm512_xor_si512(
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIq4nlValues.data()))),
      _mm512_set1_epi8(static_cast<char>(0x80)));  // v + 128 as unsigned bytes
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kPackedIq4XsBlockBytes;
    const __m512i sh = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kPackedIq4XsScalesHOffset)));
    __m512i sumi[NT];
    for (int t = 0; t < NT; ++t) sumi[t] = _mm512_setzero_si512();
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      const uint8_t* qs = gb + kPackedIq4XsQsOffset + ib * kSubLines * kLine;
      for (int l = 0; l < kSubLines; ++l) _mm_prefetch(reinterpret_cast<const char*>(qs) + kPrefetchBytes + l * kLine, _MM_HINT_T0);
      // w[l]: values 4l..4l+3 of each row (low nibbles); w[4 + l]: 16 + 4l.. (high).
      __m512i w[2 * kSubLines];
      for (int l = 0; l < kSubLines; ++l) {
        const __m512i raw = _mm512_loadu_si512(qs + l * kLine);
        w[l] = _mm512_shuffle_epi8(table, _mm512_and_si512(raw, low4));
        w[kSubLines + l] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4));
      }
      const __m512i sc = sub_block_scales(gb, sh, ib);
      for (int t = 0; t < NT; ++t) {
        const int8_t* aq = act[t][b].qs + ib * kSubLen;
        // Two independent chains (latency, for few tokens), summed exactly.
        __m512i dot0 = _mm512_setzero_si512(), dot1 = _mm512_setzero_si512();
        for (int l = 0; l < kSubLines; ++l) {
          dot0 = _mm512_dpbusd_epi32(dot0, w[l], bcast32(aq + 4 * l));
          dot1 = _mm512_dpbusd_epi32(dot1, w[kSubLines + l], bcast32(aq + kSubLen / 2 + 4 * l));
        }
        const int32_t bias = kBias * (act[t][b].bsums[2 * ib] + act[t][b].bsums[2 * ib + 1]);
        const __m512i dot = _mm512_sub_epi32(_mm512_add_epi32(dot0, dot1), _mm512_set1_epi32(bias));
        sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(dot, sc));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
    for (int t = 0; t < NT; ++t) {
      const __m512 p = _mm512_mul_round_ps(_mm512_mul_ps(d, _mm512_set1_ps(act[t][b].d)), _mm512_cvtepi32_ps(sumi[t]), kRound);
      acc[t] = _mm512_add_ps(acc[t], p);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ys, acc[t]);
}

}  // namespace

void packed_iq4_xs_avx512(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  static_assert(kPackTokens == 8);
  switch (nt) {
    case 1: return iq4_xs_group<1>(group, a, t0, y, ys);
    case 2: return iq4_xs_group<2>(group, a, t0, y, ys);
    case 3: return iq4_xs_group<3>(group, a, t0, y, ys);
    case 4: return iq4_xs_group<4>(group, a, t0, y, ys);
    case 5: return iq4_xs_group<5>(group, a, t0, y, ys);
    case 6: return iq4_xs_group<6>(group, a, t0, y, ys);
    case 7: return iq4_xs_group<7>(group, a, t0, y, ys);
    default: return iq4_xs_group<8>(group, a, t0, y, ys);
  }
}

}  // namespace ferrite::cpu
