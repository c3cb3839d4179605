// AVX2 kernel for packed IQ2_XXS (layout and formula in packed_k.h), bit for
// bit the layout's reference. A 16-row group is taken four rows at a time:
// per sub-block, the four rows' 16 grid indices are contiguous (four scalar
// lookups fill one row's 32 magnitudes), their 16 sign-and-scale bytes are
// one 128-bit load, and the eighth sign (the parity) was worked out when the
// rows were packed. Each row's signs go onto the activations (vpsignb), the
// magnitudes (<= 43) times them through vpmaddubsw (a pair stays below 2^15)
// and vpmaddwd by the row's odd scale; the four rows' eight partial sums are
// folded into one vector of rows. Integer sums are exact; the f32 finish
// per super-block is the reference's.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "cpu/dot/quant_tile_avx2.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using avx2::load256;
using quant::BlockQ8_K;

constexpr int kSubBlocks = 8;
constexpr int kQuadRows = 4;
constexpr int64_t kChunk = kPackTokens;  // tokens per pass over the weights
constexpr int64_t kPrefetchBytes = 2 * kPackedIq2XxsBlockBytes;

// Row quad's four 32-value grid vectors: idx holds four indices per row.
inline __m256i grid4(const uint8_t* idx) {
  return avx2::gather64(quant::kIq2xxsGrid.data(), idx[0], idx[1], idx[2], idx[3]);
}

// Row j's 32 signs as +1 / -1 bytes from the quad's 16 sign bytes (both halves).
inline __m256i row_signs(__m256i signs, int j) {
  const auto b = [j](int l) { return static_cast<char>(4 * j + l); };
  const __m256i pick = _mm256_setr_epi8(b(0), b(0), b(0), b(0), b(0), b(0), b(0), b(0),  //
                                        b(1), b(1), b(1), b(1), b(1), b(1), b(1), b(1),  //
                                        b(2), b(2), b(2), b(2), b(2), b(2), b(2), b(2),  //
                                        b(3), b(3), b(3), b(3), b(3), b(3), b(3), b(3));
  const __m256i bits = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(signs, pick), bits), bits);
  return _mm256_or_si256(neg, _mm256_set1_epi8(1));
}

// Row j's odd scale as an int16 in every lane, from the four rows' int32 scales (both halves).
inline __m256i row_scale(__m256i scales, int j) {
  const auto lo = static_cast<char>(4 * j), hi = static_cast<char>(4 * j + 1);
  return _mm256_shuffle_epi8(scales, _mm256_setr_epi8(lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi,  //
                                                      lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi, lo, hi));
}

// Lanes [r0 r1 r2 r3 | r0 r1 r2 r3]: each row's eight partial sums folded to two.
inline __m256i fold_rows(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
  const __m256i s01 = _mm256_add_epi32(_mm256_unpacklo_epi32(p0, p1), _mm256_unpackhi_epi32(p0, p1));
  const __m256i s23 = _mm256_add_epi32(_mm256_unpacklo_epi32(p2, p3), _mm256_unpackhi_epi32(p2, p3));
  return _mm256_add_epi32(_mm256_unpacklo_epi64(s01, s23), _mm256_unpackhi_epi64(s01, s23));
}

// Rows 4q..4q+3, sub-block ib: their 16 sign bytes with the eighth sign
// restored (for row_signs) and their odd scales 2 s + 1 as int32 (for
// row_scale), each in both halves.
inline void quad_signs_scales(const uint8_t* gb, int q, int ib, __m256i& signs, __m256i& scales) {
  const __m128i sas =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + kPackedIq2XxsSignOffset + (ib * kPackRows + kQuadRows * q) * 4));
  const __m128i u = _mm_and_si128(sas, _mm_set1_epi8(static_cast<char>(0xFE)));
  signs = _mm256_broadcastsi128_si256(_mm_xor_si128(u, _mm_srli_epi16(u, 1)));
  // Scale bits l = 0..3 of each row's four bytes -> 2 s + 1 per row.
  const __m128i bit_sums = _mm_maddubs_epi16(_mm_and_si128(sas, _mm_set1_epi8(1)), _mm_set1_epi32(0x08040201));
  const __m128i odd = _mm_or_si128(_mm_slli_epi32(_mm_madd_epi16(bit_sums, _mm_set1_epi16(1)), 1), _mm_set1_epi32(1));
  scales = _mm256_broadcastsi128_si256(odd);
}

// Rows 4q..4q+3 of super-block b, tokens t0.. (NT of them): their integer sums per token.
template <int NT>
inline void quad_block(const uint8_t* gb, int q, const BlockQ8_K* const* act, int64_t b, __m256i (&isum)[NT]) {
  for (int t = 0; t < NT; ++t) isum[t] = _mm256_setzero_si256();
  const auto sub_block = [&](int ib) __attribute__((always_inline)) {
    const uint8_t* idx = gb + kPackedIq2XxsIndexOffset + (ib * kPackRows + kQuadRows * q) * 4;
    __m256i signs, scales;
    quad_signs_scales(gb, q, ib, signs, scales);
    // Row by row, each row's product made where it is decoded: the four
    // rows' magnitudes, signs and scales all live at once spilled (12 vectors).
    __m256i p[NT][kQuadRows];
#pragma GCC unroll 4
    for (int j = 0; j < kQuadRows; ++j) {
      const __m256i w = grid4(idx + 4 * j), g = row_signs(signs, j), c = row_scale(scales, j);
      for (int t = 0; t < NT; ++t) {
        const __m256i a = load256(act[t][b].qs + 32 * ib);
        p[t][j] = _mm256_madd_epi16(_mm256_maddubs_epi16(w, _mm256_sign_epi8(a, g)), c);
        avx2::settle(p[t][j]);
      }
    }
    for (int t = 0; t < NT; ++t) {
      isum[t] = _mm256_add_epi32(isum[t], fold_rows(p[t][0], p[t][1], p[t][2], p[t][3]));
      if constexpr (NT > 1) avx2::settle(isum[t]);
    }
  };
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
  alignas(32) float acc[NT][kPackRows] = {};
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kPackedIq2XxsBlockBytes;
    for (int64_t at = 0; at < kPackedIq2XxsBlockBytes; at += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(gb) + kPrefetchBytes + at, _MM_HINT_T0);
    }
    for (int q = 0; q < kPackRows / kQuadRows; ++q) {
      __m256i isum[NT];
      quad_block<NT>(gb, q, act, b, isum);
      const __m128 d = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(gb + 2 * kQuadRows * q)));
      for (int t = 0; t < NT; ++t) {
        const __m128i rows = _mm_add_epi32(_mm256_castsi256_si128(isum[t]), _mm256_extracti128_si256(isum[t], 1));
        const __m128 p = avx2::pinned(_mm_mul_ps(_mm_mul_ps(d, _mm_set1_ps(act[t][b].d)), _mm_cvtepi32_ps(rows)));
        float* at = acc[t] + kQuadRows * q;
        _mm_store_ps(at, _mm_add_ps(_mm_load_ps(at), p));
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < kPackRows; r += 8) {
      _mm256_storeu_ps(y + t * ys + r, _mm256_mul_ps(_mm256_load_ps(acc[t] + r), _mm256_set1_ps(0.125f)));
    }
  }
}

// One super-block of a group decoded for many tokens: per row and
// sub-block the 32 magnitudes, the signed values and the odd scale (int16
// in every lane). 12 KiB, in L1 while the call's tokens run over it.
struct Decoded {
  __m256i mag[kPackRows][kSubBlocks];
  __m256i val[kPackRows][kSubBlocks];
  __m256i scale[kPackRows][kSubBlocks];
};

void decode_block(const uint8_t* gb, Decoded& d) {
  for (int q = 0; q < kPackRows / kQuadRows; ++q) {
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      const uint8_t* idx = gb + kPackedIq2XxsIndexOffset + (ib * kPackRows + kQuadRows * q) * 4;
      __m256i signs, scales;
      quad_signs_scales(gb, q, ib, signs, scales);
      for (int j = 0; j < kQuadRows; ++j) {
        const int r = kQuadRows * q + j;
        const __m256i w = grid4(idx + 4 * j);
        d.mag[r][ib] = w;
        d.val[r][ib] = _mm256_sign_epi8(w, row_signs(signs, j));
        d.scale[r][ib] = row_scale(scales, j);
      }
    }
  }
}

// Tokens of a call over one decoded super-block, NT (1 or 2) at a time so
// that each decoded vector loaded serves both: per token, row and 32 values
// 4 operations (vpsignb of the activations by the values, vpmaddubsw with
// the magnitudes, vpmaddwd by the scale, add); a quad of rows' 8 lanes
// folded once per super-block, then the f32 step of the reference.
template <int NT>
void tokens_over_block(const Decoded& d, const uint8_t* gb, const PackedActs& a, int64_t t0, int64_t b, float* acc) {
  const BlockQ8_K* act[NT];
  for (int t = 0; t < NT; ++t) act[t] = reinterpret_cast<const BlockQ8_K*>(a.q8 + (t0 + t) * a.row_bytes) + b;
  for (int q = 0; q < kPackRows / kQuadRows; ++q) {
    __m256i s[NT][kQuadRows] = {};
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      __m256i av[NT];
      for (int t = 0; t < NT; ++t) av[t] = load256(act[t]->qs + 32 * ib);
      for (int j = 0; j < kQuadRows; ++j) {
        const int r = kQuadRows * q + j;
        const __m256i mag = d.mag[r][ib], val = d.val[r][ib], sc = d.scale[r][ib];
        for (int t = 0; t < NT; ++t) {
          s[t][j] = _mm256_add_epi32(s[t][j], _mm256_madd_epi16(_mm256_maddubs_epi16(mag, _mm256_sign_epi8(av[t], val)), sc));
        }
      }
    }
    const __m128 dw = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(gb + 2 * kQuadRows * q)));
    for (int t = 0; t < NT; ++t) {
      const __m256i f = fold_rows(s[t][0], s[t][1], s[t][2], s[t][3]);
      const __m128i rows = _mm_add_epi32(_mm256_castsi256_si128(f), _mm256_extracti128_si256(f, 1));
      const __m128 prod = avx2::pinned(_mm_mul_ps(_mm_mul_ps(dw, _mm_set1_ps(act[t]->d)), _mm_cvtepi32_ps(rows)));
      float* at = acc + t * kPackRows + kQuadRows * q;
      _mm_store_ps(at, _mm_add_ps(_mm_load_ps(at), prod));
    }
  }
}

constexpr int64_t kWideTokens = 64;  // tokens per pass over the decoded blocks

}  // namespace

void packed_iq2_xxs_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  run_token_chunks<kChunk>([]<int NT>() { return &iq2_xxs_tokens<NT>; }, group, a, t0, nt, y, ys);
}

// Many tokens: each super-block decoded once per pass of up to kWideTokens
// tokens instead of once per kChunk (bit for bit the same sums).
void packed_iq2_xxs_wide_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y,
                              int64_t ys) {
  alignas(32) Decoded d;
  alignas(32) float acc[kWideTokens * kPackRows];
  for (int64_t t = 0; t < nt; t += kWideTokens) {
    const int64_t n = nt - t < kWideTokens ? nt - t : kWideTokens;
    std::fill(acc, acc + n * kPackRows, 0.0f);
    for (int64_t b = 0; b < a.n_blocks; ++b) {
      const uint8_t* gb = group + b * kPackedIq2XxsBlockBytes;
      decode_block(gb, d);
      int64_t i = 0;
      for (; i + 2 <= n; i += 2) tokens_over_block<2>(d, gb, a, t0 + t + i, b, acc + i * kPackRows);
      if (i < n) tokens_over_block<1>(d, gb, a, t0 + t + i, b, acc + i * kPackRows);
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int r = 0; r < kPackRows; r += 8) {
        _mm256_storeu_ps(y + (t + i) * ys + r, _mm256_mul_ps(_mm256_load_ps(acc + i * kPackRows + r), _mm256_set1_ps(0.125f)));
      }
    }
  }
}

}  // namespace ferrite::cpu
