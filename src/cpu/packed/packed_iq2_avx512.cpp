// AVX-512 kernel for packed IQ2_XXS (layout and formula in packed_k.h), bit
// for bit the layout's reference. The AVX2 kernel (packed_iq2_avx2.cpp)
// builds each row's +1 / -1 sign bytes with four vector operations and
// applies them with vpsignb; here a pair of rows is one 512-bit vector of 64
// values and their 64 signs are one mask register, worked out in a general
// register (three operations on the pair's eight sign bytes), so that per
// token, pair and sub-block the product is four operations: the activations
// negated under the mask, vpmaddubsw with the magnitudes (<= 43), vpmaddwd
// by the rows' odd scales, an add. Magnitudes come from the grid by eight
// scalar loads per pair. Rows are taken four at a time (two pairs), whose
// lanes are folded to four sums per super-block; the f32 finish is the
// reference's.
// gcc 12's 256-to-512-bit casts read an undefined register on purpose.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "cpu/packed/packed_matmul.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_K;

constexpr int kSubBlocks = 8;
constexpr int kQuadRows = 4;
constexpr int64_t kChunk = kPackTokens;  // tokens per pass over the weights
constexpr int64_t kPrefetchBytes = 2 * kPackedIq2XxsBlockBytes;

// Rows r, r + 1's 64 magnitudes (row r in the low half) from their eight
// grid indices.
inline __m512i pair_magnitudes(const uint8_t* idx) {
  const uint64_t* grid = quant::kIq2xxsGrid.data();
  const auto quarter = [grid](const uint8_t* i) {
    const __m128d lo = _mm_castsi128_pd(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(grid + i[0])));
    return _mm_castpd_si128(_mm_loadh_pd(lo, reinterpret_cast<const double*>(grid + i[1])));
  };
  const __m256i lo = _mm256_inserti128_si256(_mm256_castsi128_si256(quarter(idx)), quarter(idx + 2), 1);
  const __m256i hi = _mm256_inserti128_si256(_mm256_castsi128_si256(quarter(idx + 4)), quarter(idx + 6), 1);
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// The pair's 64 signs (bit 8l + j of row r's 32: value 8l + j negative) from
// its eight sign-and-scale bytes: bits 1-7 of each byte are the prefix
// parities of the signs, so a byte's signs are its bits 1-7 xor themselves
// shifted down one (bit 0, the scale bit, cleared first; the 64-bit shift
// moves a cleared bit 0 into the byte below's bit 7, the parity sign).
inline __mmask64 pair_signs(const uint8_t* sas) {
  uint64_t v;
  std::memcpy(&v, sas, sizeof v);
  const uint64_t u = v & 0xFEFEFEFEFEFEFEFEull;
  return _cvtu64_mask64(u ^ (u >> 1));
}

// The four rows' odd scales 2 s + 1 (s: bit 0 of each of a row's four
// sign-and-scale bytes) as int32, from the quad's 16 bytes.
inline __m128i quad_scales(const uint8_t* sas) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sas));
  const __m128i bit_sums = _mm_maddubs_epi16(_mm_and_si128(bytes, _mm_set1_epi8(1)), _mm_set1_epi32(0x08040201));
  return _mm_or_si128(_mm_slli_epi32(_mm_madd_epi16(bit_sums, _mm_set1_epi16(1)), 1), _mm_set1_epi32(1));
}

// Rows 2j and 2j + 1 of the quad's scales (int32 lanes 0-3) as int16 in
// every lane of the low and the high half.
inline __m512i pair_scale(__m128i quad, int j) {
  const __m512i pick = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(4 * j)),
                                          _mm256_set1_epi16(static_cast<int16_t>(4 * j + 2)), 1);
  return _mm512_permutexvar_epi16(pick, _mm512_castsi128_si512(quad));
}

// [r0 x 8 | r1 x 8] and [r2 x 8 | r3 x 8] -> r0, r1, r2, r3.
inline __m128i fold_quad(__m512i p01, __m512i p23) {
  // Per 128-bit lane L: [p01 + p23 interleaved by dwords], then by qwords.
  const __m512i s = _mm512_add_epi32(_mm512_unpacklo_epi32(p01, p23), _mm512_unpackhi_epi32(p01, p23));
  const __m512i q = _mm512_add_epi32(_mm512_unpacklo_epi64(s, s), _mm512_unpackhi_epi64(s, s));
  // Lanes 0, 1: (r0, r2) partial sums; lanes 2, 3: (r1, r3).
  const __m512i f = _mm512_add_epi32(q, _mm512_shuffle_i64x2(q, q, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_unpacklo_epi32(_mm512_castsi512_si128(f), _mm512_extracti32x4_epi32(f, 2));
}

// Rows 4q..4q+3 of super-block b: the integer sums of NT tokens.
template <int NT>
inline void quad_block(const uint8_t* gb, int q, const BlockQ8_K* const* act, int64_t b, __m512i (&sum)[NT][2]) {
  for (int t = 0; t < NT; ++t) sum[t][0] = sum[t][1] = _mm512_setzero_si512();
  const auto sub_block = [&](int ib) __attribute__((always_inline)) {
    const int64_t at = (ib * kPackRows + kQuadRows * q) * 4;
    const uint8_t* idx = gb + kPackedIq2XxsIndexOffset + at;
    const uint8_t* sas = gb + kPackedIq2XxsSignOffset + at;
    const __m128i scales = quad_scales(sas);
    __m512i mag[2], sc[2];
    __mmask64 neg[2];
    for (int j = 0; j < 2; ++j) {
      mag[j] = pair_magnitudes(idx + 8 * j);
      neg[j] = pair_signs(sas + 8 * j);
      sc[j] = pair_scale(scales, j);
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const __m512i a = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[t][b].qs + 32 * ib)));
      for (int j = 0; j < 2; ++j) {
        const __m512i signed_a = _mm512_mask_sub_epi8(a, neg[j], _mm512_setzero_si512(), a);
        sum[t][j] = _mm512_add_epi32(sum[t][j], _mm512_madd_epi16(_mm512_maddubs_epi16(mag[j], signed_a), sc[j]));
      }
    }
  };
  // Unrolled only for few tokens: with more, gcc turned the sums of the
  // unrolled sub-blocks into a tree and kept the products on the stack.
  if constexpr (NT <= 2) {
#pragma GCC unroll 8
    for (int ib = 0; ib < kSubBlocks; ++ib) sub_block(ib);
  } else {
    for (int ib = 0; ib < kSubBlocks; ++ib) sub_block(ib);
  }
}

template <int NT>
void iq2_xxs_tokens(const uint8_t* group, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  const BlockQ8_K* act[NT];
  for (int t = 0; t < NT; ++t) act[t] = reinterpret_cast<const BlockQ8_K*>(a.q8 + (t0 + t) * a.row_bytes);
  alignas(64) float acc[NT][kPackRows] = {};
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kPackedIq2XxsBlockBytes;
    for (int64_t at = 0; at < kPackedIq2XxsBlockBytes; at += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(gb) + kPrefetchBytes + at, _MM_HINT_T0);
    }
    for (int q = 0; q < kPackRows / kQuadRows; ++q) {
      __m512i sum[NT][2];
      quad_block<NT>(gb, q, act, b, sum);
      const __m128 d = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(gb + 2 * kQuadRows * q)));
      for (int t = 0; t < NT; ++t) {
        const __m128i rows = fold_quad(sum[t][0], sum[t][1]);
        __m128 p = _mm_mul_ps(_mm_mul_ps(d, _mm_set1_ps(act[t][b].d)), _mm_cvtepi32_ps(rows));
        asm("" : "+v"(p));  // no fusing with the add: the reference rounds the product
        float* out = acc[t] + kQuadRows * q;
        _mm_store_ps(out, _mm_add_ps(_mm_load_ps(out), p));
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    _mm512_storeu_ps(y + t * ys, _mm512_mul_ps(_mm512_load_ps(acc[t]), _mm512_set1_ps(0.125f)));
  }
}

}  // namespace

void packed_iq2_xxs_avx512(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  run_token_chunks<kChunk>([]<int NT>() { return &iq2_xxs_tokens<NT>; }, group, a, t0, nt, y, ys);
}

}  // namespace ferrite::cpu
