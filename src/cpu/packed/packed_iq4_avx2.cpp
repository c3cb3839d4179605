// AVX2 kernel for packed IQ4_XS (layout and formula in packed_k.h), bit for
// bit the layout's reference. A 16-row group is taken as two halves of 8
// rows (one 32-byte half of each 64-byte line), 8 int32 lanes = 8 rows.
// The nibbles index the 16 non-linear values with vpshufb; the values are
// signed (|v| <= 127), so each product goes as |v| x sign(a, v) through
// vpmaddubsw (a pair stays below 2^15) and vpmaddwd by the rows' sub-block
// scales (ls - 32). Integer sums are exact; the f32 finish per super-block is
// the reference's.
#include <immintrin.h>

#include <cstdint>

#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using avx2::bcast32;
using avx2::load256;
using quant::BlockQ8_K;

constexpr int kSubBlocks = 8;
constexpr int64_t kLine = 64;
constexpr int64_t kHalfRows = 8;
constexpr int kPrefetchBytes = 4096;
constexpr int64_t kChunk = kPackTokens;  // tokens per pass over the weights

// Where sub-block ib's 16 scales sit in sub_block_scales' output: the
// vectors hold sub-blocks (0 | 2), (1 | 3), (4 | 6), (5 | 7) by 128-bit lane.
constexpr int scales_at(int ib) { return (ib / 4) * 64 + (ib % 2) * 32 + ((ib / 2) % 2) * 16; }

// The signed scales ls - 32 of the 8 sub-blocks of super-block `gb` for its
// 16 rows, as bytes (at scales_at(ib) + row): the scales_l nibbles of two
// sub-blocks at once, and the scales_h bit pairs moved to bits 4-5 by
// per-lane shifts of the rows' low (sub-blocks 0-3) or high (4-7) bytes.
inline void sub_block_scales(const uint8_t* gb, int8_t* out) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  const __m256i bias = _mm256_set1_epi8(32);
  // Per 128-bit lane: the low bytes of the 8 rows' u16 scales_h, then the high bytes.
  const __m256i split = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8, 10, 12, 14,
                                         1, 3, 5, 7, 9, 11, 13, 15);
  const __m256i sh = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(load256(gb + kPackedIq4XsScalesHOffset), split), 0xD8);
  const __m256i bits[2] = {_mm256_permute4x64_epi64(sh, 0x44), _mm256_permute4x64_epi64(sh, 0xEE)};  // sub-blocks 0-3, 4-7
  const __m256i up4 = _mm256_setr_epi32(4, 4, 4, 4, 0, 0, 0, 0);
  const __m256i up2 = _mm256_setr_epi32(2, 2, 2, 2, 0, 0, 0, 0);
  const __m256i down2 = _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2);
  for (int i = 0; i < 2; ++i) {
    const __m256i sl = load256(gb + kPackedIq4XsScalesLOffset + 32 * i);  // nibbles of (4i, 4i+1 | 4i+2, 4i+3)
    // Lane 0: bits 0-1 (sub-block 4i) or 2-3 (4i+1); lane 1: bits 4-5 (4i+2) or 6-7 (4i+3).
    const __m256i even = _mm256_and_si256(_mm256_sllv_epi32(bits[i], up4), bits45);
    const __m256i odd = _mm256_and_si256(_mm256_srlv_epi32(_mm256_sllv_epi32(bits[i], up2), down2), bits45);
    const __m256i s_even = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(sl, low4), even), bias);
    const __m256i s_odd = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(sl, 4), low4), odd), bias);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 64 * i), s_even);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 64 * i + 32), s_odd);
  }
}

// NT tokens times H 8-row halves of a group, from half h0. One token takes
// both halves per pass (H = 2), so that the memory streams the group's lines
// once, as in packed_k6_avx2.cpp.
template <int NT, int H>
void iq4_xs_halves(const uint8_t* group, int64_t h0, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  const BlockQ8_K* act[NT];
  for (int t = 0; t < NT; ++t) act[t] = reinterpret_cast<const BlockQ8_K*>(a.q8 + (t0 + t) * a.row_bytes);
  __m256 acc[H][NT];
  for (auto& row : acc) {
    for (auto& v : row) v = _mm256_setzero_ps();
  }
  const __m256i values =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIq4nlValues.data())));
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kPackedIq4XsBlockBytes;
    alignas(32) int8_t scales[kSubBlocks * kPackRows];
    sub_block_scales(gb, scales);
    __m256i sumi[H][NT];
    for (auto& row : sumi) {
      for (auto& v : row) v = _mm256_setzero_si256();
    }
    const auto sub_block = [&](int ib) __attribute__((always_inline)) {
      const uint8_t* qs0 = gb + kPackedIq4XsQsOffset + 4 * ib * kLine;
      avx2::prefetch_part<kPackedIq4XsBlockBytes, kSubBlocks>(gb + kPrefetchBytes, ib);
      for (int h = 0; h < H; ++h) {
        const __m256i sc = avx2::twice_scales(scales + scales_at(ib), h0 + h);
        const uint8_t* qs = qs0 + (h0 + h) * (kLine / 2);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
          // Lane i % 4 of the sub-block: values 4i..4i+3 (low nibbles), then 16 + 4(i-4).. (high).
          const __m256i raw = load256(qs + (i % 4) * kLine);
          const __m256i idx = _mm256_and_si256(i < 4 ? raw : _mm256_srli_epi16(raw, 4), low4);
          const __m256i v = _mm256_shuffle_epi8(values, idx);
          const __m256i av = _mm256_sign_epi8(v, v);
          const int off = i < 4 ? 4 * i : 16 + 4 * (i - 4);
          for (int t = 0; t < NT; ++t) {
            const __m256i p = _mm256_maddubs_epi16(av, _mm256_sign_epi8(bcast32(act[t][b].qs + 32 * ib + off), v));
            sumi[h][t] = _mm256_add_epi32(sumi[h][t], _mm256_madd_epi16(p, sc));
            avx2::settle(sumi[h][t]);
          }
        }
      }
    };
    // Unrolled for decode (few tokens: the sub-block's shifts and offsets
    // become constants, 106 -> 98 instructions per 256 values and row), not
    // for 8 tokens, whose unrolled body outgrows the decoded-uop cache (7-10%
    // slower on the device Xeon's lab).
    if constexpr (NT <= 2) {
#pragma GCC unroll 8
      for (int ib = 0; ib < kSubBlocks; ++ib) sub_block(ib);
    } else {
      for (int ib = 0; ib < kSubBlocks; ++ib) sub_block(ib);
    }
    for (int h = 0; h < H; ++h) {
      const __m256 d = avx2::load8_f16(gb + (h0 + h) * kHalfRows * 2);
      for (int t = 0; t < NT; ++t) {
        const __m256 p =
            avx2::pinned(_mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(act[t][b].d)), _mm256_cvtepi32_ps(sumi[h][t])));
        acc[h][t] = _mm256_add_ps(acc[h][t], p);
      }
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ys + (h0 + h) * kHalfRows, acc[h][t]);
  }
}

}  // namespace

void packed_iq4_xs_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  run_halves<kChunk>([]<int NT, int H>() { return &iq4_xs_halves<NT, H>; }, group, a, t0, nt, y, ys);
}

}  // namespace ferrite::cpu
