// AVX-512 VNNI kernel for packed Q6_K (layout and formula in packed_k.h).
// Per quarter (32 elements: 2 sub-blocks of 16) of a half super-block: 8 zmm
// of 6-bit values (16 rows x 4 bytes) built from the ql nibbles and 2 qh
// bits, then per token 4 vpdpbusd per sub-block with broadcast dwords of the
// token's Q8_K values; the -32 offset comes off with the token's bsums, the
// signed scales multiply in int32 (vpmulld). The f32 finish per super-block
// is the reference's.
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

constexpr int kLanes = 8;           // 4-byte lanes per quarter of 32 elements
constexpr int kLanesPerSub = 4;     // per sub-block of 16
constexpr int kLaneStride = 64;     // bytes of one lane of 16 rows
constexpr int32_t kQ6Offset = 32;
constexpr int kPrefetchBytes = 4096;
constexpr int kCacheLine = 64;
constexpr int kBlockLines = (kPackedQ6KBlockBytes + kCacheLine - 1) / kCacheLine;
constexpr int kLinesPerQuarter = (kBlockLines + 7) / 8;
constexpr int kSelectAB = 0xE4;  // vpternlog: C ? A : B, bit by bit
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

inline __m512i bcast32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

template <int NT>
void q6_k_group(const uint8_t* group, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  const BlockQ8_K* act[NT];
  for (int t = 0; t < NT; ++t) act[t] = reinterpret_cast<const BlockQ8_K*>(a.q8 + (t0 + t) * a.row_bytes);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i low6 = _mm512_set1_epi8(0x3F);
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kPackedQ6KBlockBytes;
    __m512i sumi[NT];
    for (int t = 0; t < NT; ++t) sumi[t] = _mm512_setzero_si512();
    for (int half = 0; half < 2; ++half) {
      const uint8_t* qh = gb + kPackedQ6KQhOffset + (kLanes * half) * kLaneStride;
      __m512i h[kLanes];  // the half's high bits, loaded once for its 4 quarters
      for (int i = 0; i < kLanes; ++i) h[i] = _mm512_loadu_si512(qh + i * kLaneStride);
      for (int c = 0; c < 4; ++c) {
        const uint8_t* ql = gb + kPackedQ6KQlOffset + (16 * half + (c % 2) * kLanes) * kLaneStride;
        // An eighth of the super-block's lines per quarter, kPrefetchBytes
        // ahead: every line of it (ql, qh, scales) is asked for in time.
        const int quarter = 4 * half + c;
        for (int line = quarter * kLinesPerQuarter; line < (quarter + 1) * kLinesPerQuarter && line < kBlockLines;
             ++line) {
          _mm_prefetch(reinterpret_cast<const char*>(gb) + kPrefetchBytes + line * kCacheLine, _MM_HINT_T0);
        }
        __m512i w[kLanes];
        for (int i = 0; i < kLanes; ++i) {
          const __m512i l = _mm512_loadu_si512(ql + i * kLaneStride);
          const __m512i nib = c < 2 ? l : _mm512_srli_epi16(l, 4);
          // bits 2c, 2c+1 of qh moved to bits 4, 5
          const __m512i hs = c < 2 ? _mm512_slli_epi16(h[i], 4 - 2 * c) : (c == 2 ? h[i] : _mm512_srli_epi16(h[i], 2));
          // nib & 0x0F | hs & 0x30 (bitwise select by low4, then the high two bits cleared)
          w[i] = _mm512_and_si512(_mm512_ternarylogic_epi32(nib, hs, low4, kSelectAB), low6);
        }
        for (int s = 0; s < 2; ++s) {
          const int sb = 8 * half + 2 * c + s;
          const __m512i sc = _mm512_cvtepi8_epi32(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + kPackedQ6KScOffset + sb * 16)));
          for (int t = 0; t < NT; ++t) {
            const int8_t* aq = act[t][b].qs + sb * 16;
            __m512i dot = _mm512_set1_epi32(-kQ6Offset * act[t][b].bsums[sb]);
            for (int i = 0; i < kLanesPerSub; ++i) {
              dot = _mm512_dpbusd_epi32(dot, w[s * kLanesPerSub + i], bcast32(aq + i * 4));
            }
            sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(dot, sc));
          }
        }
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
    for (int t = 0; t < NT; ++t) {
      const __m512 dd = _mm512_mul_ps(d, _mm512_set1_ps(act[t][b].d));
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_round_ps(dd, _mm512_cvtepi32_ps(sumi[t]), kRound));
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ys, acc[t]);
}

}  // namespace

void packed_q6_k_avx512(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  static constexpr auto kFns = per_token_count([]<int NT>() { return &q6_k_group<NT>; });
  kFns[nt - 1](group, a, t0, y, ys);
}

}  // namespace ferrite::cpu
