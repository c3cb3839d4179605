// AVX-512 VNNI kernel for packed IQ4_XS (layout and formula in packed_k.h),
// bit for bit the layout's reference. Per sub-block of 32 of a group
// super-block: 4 zmm of nibbles (16 rows x 4 bytes), their low and high
// nibbles looked up with vpshufb in the 16 non-linear values plus 128
// (0..241, unsigned for vpdpbusd), then per token 8 vpdpbusd with broadcast
// dwords of the token's Q8_K values, started from -128 times the token's
// sum over the sub-block (its two bsums), give the 16 rows' exact sums of
// value x activation; vpmulld by the rows' scales ls - 32 accumulates them in
// int32. The f32 finish per super-block is the reference's.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <array>
#include <cstring>

#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_K;

constexpr int kSubBlocks = 8;
constexpr int kLanes = 4;     // 4-byte lanes of qs per sub-block (16 bytes: 32 nibbles)
constexpr int kLine = 64;     // bytes of one lane of 16 rows
constexpr int kHalf = 16;     // high nibbles: elements 16..31 of the sub-block
constexpr int32_t kValueBias = 128;
constexpr int32_t kScaleBias = 32;
constexpr int kPrefetchBytes = 4096;
constexpr int kBlockLines = kPackedIq4XsBlockBytes / kLine;  // 34
constexpr int kLinesPerSub = (kBlockLines + kSubBlocks - 1) / kSubBlocks;
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
static_assert(kPackedIq4XsBlockBytes % kLine == 0);

// kIq4nlValues + 128: the lookup table of the unsigned values.
constexpr std::array<uint8_t, 16> biased_values() {
  std::array<uint8_t, 16> out{};
  for (int i = 0; i < 16; ++i) out[i] = static_cast<uint8_t>(quant::kIq4nlValues[i] + kValueBias);
  return out;
}
alignas(16) constexpr std::array<uint8_t, 16> kBiasedValues = biased_values();

inline __m512i bcast32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// The 16 rows' scales ls - 32 of sub-block ib as int32 lanes; sh holds their scales_h.
inline __m512i sub_scales(const uint8_t* gb, __m512i sh, int ib) {
  const __m512i sl = _mm512_cvtepu8_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + kPackedIq4XsScalesLOffset + (ib / 2) * kPackRows)));
  const __m512i lo = _mm512_and_si512(_mm512_srli_epi32(sl, 4 * (ib % 2)), _mm512_set1_epi32(0x0F));
  const __m512i hi = _mm512_and_si512(_mm512_srli_epi32(sh, 2 * ib), _mm512_set1_epi32(3));
  return _mm512_sub_epi32(_mm512_or_si512(lo, _mm512_slli_epi32(hi, 4)), _mm512_set1_epi32(kScaleBias));
}

template <int NT>
void iq4_xs_group(const uint8_t* group, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  const BlockQ8_K* act[NT];
  for (int t = 0; t < NT; ++t) act[t] = reinterpret_cast<const BlockQ8_K*>(a.q8 + (t0 + t) * a.row_bytes);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i values = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(kBiasedValues.data())));
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kPackedIq4XsBlockBytes;
    const __m512i sh = _mm512_cvtepu16_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kPackedIq4XsScalesHOffset)));
    __m512i sumi[NT];
    for (int t = 0; t < NT; ++t) sumi[t] = _mm512_setzero_si512();
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      // An eighth of the super-block's lines per sub-block, kPrefetchBytes
      // ahead: every line of it is asked for in time.
      for (int line = ib * kLinesPerSub; line < (ib + 1) * kLinesPerSub && line < kBlockLines; ++line) {
        _mm_prefetch(reinterpret_cast<const char*>(gb) + kPrefetchBytes + line * kLine, _MM_HINT_T0);
      }
      const uint8_t* qs = gb + kPackedIq4XsQsOffset + ib * kLanes * kLine;
      __m512i w[2 * kLanes];  // [j]: elements 4j..4j+3 (low nibbles), [kLanes + j]: 16 + 4j.. (high)
      for (int j = 0; j < kLanes; ++j) {
        const __m512i raw = _mm512_loadu_si512(qs + j * kLine);
        w[j] = _mm512_shuffle_epi8(values, _mm512_and_si512(raw, low4));
        w[kLanes + j] = _mm512_shuffle_epi8(values, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4));
      }
      const __m512i sc = sub_scales(gb, sh, ib);
      for (int t = 0; t < NT; ++t) {
        const int8_t* aq = act[t][b].qs + 32 * ib;
        const int32_t bs = act[t][b].bsums[2 * ib] + act[t][b].bsums[2 * ib + 1];
        // Two independent vpdpbusd chains (latency, for few tokens), summed exactly.
        __m512i dot0 = _mm512_set1_epi32(-kValueBias * bs), dot1 = _mm512_setzero_si512();
        for (int j = 0; j < kLanes; ++j) {
          dot0 = _mm512_dpbusd_epi32(dot0, w[j], bcast32(aq + 4 * j));
          dot1 = _mm512_dpbusd_epi32(dot1, w[kLanes + j], bcast32(aq + kHalf + 4 * j));
        }
        sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(_mm512_add_epi32(dot0, dot1), sc));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb)));
    for (int t = 0; t < NT; ++t) {
      // An explicitly rounded product: not fused into an FMA with the add,
      // so the sum stays bit-identical to the reference's.
      const __m512 dd = _mm512_mul_ps(d, _mm512_set1_ps(act[t][b].d));
      acc[t] = _mm512_add_ps(acc[t], _mm512_mul_round_ps(dd, _mm512_cvtepi32_ps(sumi[t]), kRound));
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ys, acc[t]);
}

}  // namespace

void packed_iq4_xs_avx512(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  static constexpr auto kFns = per_token_count([]<int NT>() { return &iq4_xs_group<NT>; });
  kFns[nt - 1](group, a, t0, y, ys);
}

}  // namespace ferrite::cpu
