// AVX2 kernel for packed Q6_K (layout and formula in packed_k.h), bit for
// bit the layout's reference. A 16-row group is taken as two halves of 8
// rows (one 32-byte half of each 64-byte line), 8 int32 lanes = 8 rows.
// Per sub-block of 16: 4 vectors of 6-bit values built from the ql nibbles
// and 2 qh bits, once for all tokens of a call; per token 4 vpmaddubsw with
// broadcast dwords of its Q8_K values, added by twos in int16 (2 x 2 x 63 x
// 127 < 2^15) and widened by vpmaddwd with the rows' signed scales. The -32 offset comes off through the
// token's 16-sums (sum_sb scale_sb * bsums_sb, by pairs with vpmaddwd).
// The f32 finish per super-block is the reference's.
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

constexpr int kSubBlocks = 16;
constexpr int kLanes = 8;        // 4-byte lanes per quarter of 32 elements
constexpr int kLanesPerSub = 4;  // per sub-block of 16
constexpr int64_t kLine = 64;    // bytes of one lane of 16 rows
constexpr int64_t kHalfRows = 8;
constexpr int kQ6OffsetShift = 5;  // the -32 offset, as a shift
constexpr int kPrefetchBytes = 4096;
constexpr int64_t kChunk = kPackTokens;  // tokens per pass over the weights

// The 4 lanes of sub-block sb (16 elements: quarter c = (sb % 8) / 2 of half
// super-block hs = sb / 8, its first or second 16) for 8 rows: values 0..63.
inline void sub_values(const uint8_t* gb, int64_t half, int sb, __m256i* w) {
  const int hs = sb / 8, c = (sb % 8) / 2, s = sb % 2;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  const uint8_t* ql = gb + kPackedQ6KQlOffset + (16 * hs + (c % 2) * kLanes + kLanesPerSub * s) * kLine + half * (kLine / 2);
  const uint8_t* qh = gb + kPackedQ6KQhOffset + (kLanes * hs + kLanesPerSub * s) * kLine + half * (kLine / 2);
#pragma GCC unroll 4
  for (int i = 0; i < kLanesPerSub; ++i) {
    const __m256i l = load256(ql + i * kLine);
    const __m256i h = load256(qh + i * kLine);
    const __m256i nib = _mm256_and_si256(c < 2 ? l : _mm256_srli_epi16(l, 4), low4);
    // bits 2c, 2c+1 of qh moved to bits 4, 5
    const __m256i hs2 = c == 0 ? _mm256_slli_epi16(h, 4) : c == 1 ? _mm256_slli_epi16(h, 2) : c == 2 ? h : _mm256_srli_epi16(h, 2);
    w[i] = _mm256_or_si256(nib, _mm256_and_si256(hs2, bits45));
  }
}

// The scales of sub-blocks 2q and 2q + 1 (`sc32`: 16 rows each) for the 8
// rows of `half`, as int16 pairs (2q low, 2q + 1 high) per row's lane: both
// sub-blocks' bytes of the half in each 128-bit lane, then each byte put high
// in its int16 by vpshufb and shifted down with its sign, as in
// avx2::twice_scales.
inline __m256i scale_pairs(const uint8_t* sc32, int64_t half) {
  const auto lane = [](int j) { return static_cast<int>(0x00800080u | static_cast<uint32_t>(j) << 8 | static_cast<uint32_t>(8 + j) << 24); };
  const __m256i pick = _mm256_setr_epi32(lane(0), lane(1), lane(2), lane(3), lane(4), lane(5), lane(6), lane(7));
  const __m256i both = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc32));
  const __m256i halves = half == 0 ? _mm256_permute4x64_epi64(both, 0x88) : _mm256_permute4x64_epi64(both, 0xDD);
  return _mm256_srai_epi16(_mm256_shuffle_epi8(halves, pick), 8);
}

// NT tokens times H 8-row halves of a group, from half h0: per sub-block
// of 16 the 4 weight vectors are built once for all NT tokens (with NT = 8
// they and the 8 int32 sums stay in registers). One token takes both halves
// per pass (H = 2), so that the memory streams the group's lines once, as
// in packed_k_avx2.cpp.
template <int NT, int H>
void q6_k_halves(const uint8_t* group, int64_t h0, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  const uint8_t* act0 = a.q8 + t0 * a.row_bytes;
  const auto act = [&](int t, int64_t b) {
    return reinterpret_cast<const BlockQ8_K*>(act0 + t * a.row_bytes) + b;
  };
  __m256 acc[H][NT];
  for (auto& row : acc) {
    for (auto& v : row) v = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * kPackedQ6KBlockBytes;
    __m256i sumi[H][NT];
    for (int h = 0; h < H; ++h) {
      __m256i pairs[kSubBlocks / 2];
      for (int q = 0; q < kSubBlocks / 2; ++q) pairs[q] = scale_pairs(gb + kPackedQ6KScOffset + 2 * q * kPackRows, h0 + h);
      for (int t = 0; t < NT; ++t) {
        // -32 * sum_sb scale_sb * bsums_sb, two sub-blocks per vpmaddwd.
        __m256i off = _mm256_setzero_si256();
        for (int q = 0; q < kSubBlocks / 2; ++q) {
          off = _mm256_add_epi32(off, _mm256_madd_epi16(pairs[q], bcast32(act(t, b)->bsums + 2 * q)));
        }
        sumi[h][t] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(off, kQ6OffsetShift));  // -32 * off
      }
    }
    // Unrolled: each sub-block's shifts and line offsets are constants (the
    // loop kept them at run time: 241 instructions per 256 values and row at
    // NT = 1, callgrind).
#pragma GCC unroll 16
    for (int sb = 0; sb < kSubBlocks; ++sb) {
      avx2::prefetch_part<kPackedQ6KBlockBytes, kSubBlocks>(gb + kPrefetchBytes, sb);
      for (int h = 0; h < H; ++h) {
        __m256i w[kLanesPerSub];
        sub_values(gb, h0 + h, sb, w);
        const __m256i sc = avx2::twice_scales(gb + kPackedQ6KScOffset + sb * kPackRows, h0 + h);
        for (int t = 0; t < NT; ++t) {
          const int8_t* aq = act(t, b)->qs + sb * 16;
          const __m256i p0 = _mm256_add_epi16(_mm256_maddubs_epi16(w[0], bcast32(aq)),
                                              _mm256_maddubs_epi16(w[1], bcast32(aq + 4)));
          const __m256i p1 = _mm256_add_epi16(_mm256_maddubs_epi16(w[2], bcast32(aq + 8)),
                                              _mm256_maddubs_epi16(w[3], bcast32(aq + 12)));
          sumi[h][t] = _mm256_add_epi32(sumi[h][t],
                                        _mm256_add_epi32(_mm256_madd_epi16(p0, sc), _mm256_madd_epi16(p1, sc)));
          avx2::settle(sumi[h][t]);
        }
      }
    }
    for (int h = 0; h < H; ++h) {
      const __m256 d = avx2::load8_f16(gb + (h0 + h) * kHalfRows * 2);
      for (int t = 0; t < NT; ++t) {
        const __m256 p = avx2::pinned(_mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(act(t, b)->d)), _mm256_cvtepi32_ps(sumi[h][t])));
        acc[h][t] = _mm256_add_ps(acc[h][t], p);
      }
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ys + (h0 + h) * kHalfRows, acc[h][t]);
  }
}

}  // namespace

void packed_q6_k_avx2(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  run_halves<kChunk>([]<int NT, int H>() { return &q6_k_halves<NT, H>; }, group, a, t0, nt, y, ys);
}

}  // namespace ferrite::cpu
