// AVX-512 (VNNI) products of K-quant weights with Q8_K activations, as
// register-blocked tiles of up to 4 rows x 4 tokens (quant_dot.h). The weight
// block of a row (its bits and its scales) is decoded once and reused for
// every token of the tile; a single dot is the 1 x 1 tile, so tiles and dots
// agree bit for bit.
//
// Types: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
//
// Integer part of a block (exact): vpdpbusd multiplies the unsigned weight
// values (Q2_K 0..3, Q3_K 0..7, Q4_K 0..15, Q5_K 0..31, Q6_K 0..63) by the
// activations, four products per 32-bit lane, 64 values per instruction.
// Such a lane stays below 2^15 (4 * 63 * 128), so two of them are packed to
// 16 bits (vpackssdw) and the sub-block scales applied with one vpdpwssd
// per 128 values. Offsets (the Q2_K/Q4_K/Q5_K mins, the Q3_K bias of 4, the
// Q6_K bias of 32) go through the activations' 16-sums.
// Float part: one FMA per block into 16 lanes, summed at the end.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <array>
#include <cstring>
#include <type_traits>

#include "cpu/dot/act_quant.h"
#include "cpu/dot/quant_dot_k.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_K;
using quant::kQKK;

// Software prefetch distance along each weight row (see quant_dot_avx512.cpp).
constexpr int kPrefetchBytes = 1024;
constexpr size_t kCacheLine = 64;

constexpr int kQ6Bias = 32;
constexpr int kOrAnd = 0xEA;              // vpternlog: (a & b) | c
constexpr __mmask16 kLowHalf = 0x00FF;  // 32-bit lanes 0..7
constexpr int kSwapHalves = 0x4E;       // vshufi64x2: 256-bit halves swapped

// Every cache line of one weight block, `ahead` bytes further.
template <size_t Bytes>
inline void prefetch_block(const void* p, size_t ahead) {
  const char* c = static_cast<const char*>(p) + ahead;
  for (size_t o = 0; o < Bytes; o += kCacheLine) _mm_prefetch(c + o, _MM_HINT_T0);
}

size_t q8_k_row_bytes(int64_t k) { return static_cast<size_t>(k / kQKK) * sizeof(BlockQ8_K); }

// Index tables for vpermw: where each 16-bit lane of packs(v_a, v_b) takes
// its scale from. packs interleaves per 128-bit lane L: 16-bit lanes
// 8L..8L+3 come from v_a's 32-bit lanes 4L..4L+3, 8L+4..8L+7 from v_b's.
// sub(pair, L, from_b) is the sub-block those lanes belong to.
template <typename Sub>
constexpr std::array<int16_t, 32> pair_index(int pair, Sub sub) {
  std::array<int16_t, 32> idx{};
  for (int p = 0; p < 32; ++p) idx[p] = static_cast<int16_t>(sub(pair, p / 8, p % 8 >= 4));
  return idx;
}

// Q4_K: vector j holds sub-blocks 2j (32-bit lanes 0..7, i.e. L = 0, 1) and
// 2j+1 (L = 2, 3); pairs are (v0, v1) and (v2, v3).
constexpr auto q4_k_sub = [](int pair, int lane, bool from_b) { return 4 * pair + (from_b ? 2 : 0) + (lane >= 2); };
// Q6_K, Q3_K, Q2_K: vector i holds sub-blocks 4i..4i+3, one per 128-bit lane.
constexpr auto q16_sub = [](int pair, int lane, bool from_b) { return 8 * pair + (from_b ? 4 : 0) + lane; };

alignas(64) constexpr std::array<int16_t, 32> kQ4KIdx0 = pair_index(0, q4_k_sub);
alignas(64) constexpr std::array<int16_t, 32> kQ4KIdx1 = pair_index(1, q4_k_sub);
alignas(64) constexpr std::array<int16_t, 32> kQ16Idx0 = pair_index(0, q16_sub);
alignas(64) constexpr std::array<int16_t, 32> kQ16Idx1 = pair_index(1, q16_sub);

inline __m512i load_idx(const std::array<int16_t, 32>& a) { return _mm512_load_si512(a.data()); }

// The eight 6-bit scales and mins of a Q4_K block, one byte each (the
// packing of quant::ref::k_scale_min, four sub-blocks per 32-bit word).
inline void q4_k_scales_mins(const uint8_t* packed, uint64_t* scales, uint64_t* mins) {
  constexpr uint32_t kLow6 = 0x3F3F3F3F, kLow4 = 0x0F0F0F0F, kLow2 = 0x03030303;
  uint32_t u[3];
  std::memcpy(u, packed, sizeof u);
  const uint32_t sc_lo = u[0] & kLow6;
  const uint32_t mn_lo = u[1] & kLow6;
  const uint32_t sc_hi = (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4);
  const uint32_t mn_hi = ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4);
  *scales = sc_lo | (static_cast<uint64_t>(sc_hi) << 32);
  *mins = mn_lo | (static_cast<uint64_t>(mn_hi) << 32);
}

// Q4_K, and Q5_K (Block = BlockQ5_K): the fifth bit of each value from qh.
template <typename Block, int NR, int NT>
void q45_k_tile(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  constexpr bool kFiveBit = std::is_same_v<Block, BlockQ5_K>;
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  // Low 256 bits keep the low nibbles, high 256 bits get the high ones.
  const __m512i nibble_shift = _mm512_set_epi64(4, 4, 4, 4, 0, 0, 0, 0);
  const __m512i idx0 = load_idx(kQ4KIdx0), idx1 = load_idx(kQ4KIdx1);
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc[NR][NT];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < k / kQKK; ++b) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const Block& wb = reinterpret_cast<const Block*>(w + r * wrb)[b];
      prefetch_block<sizeof(Block)>(&wb, NR * wrb);
      uint64_t sc8, mn8;
      q4_k_scales_mins(wb.scales, &sc8, &mn8);
      const __m512i sc16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sc8))));
      const __m512i sc_a = _mm512_permutexvar_epi16(idx0, sc16);  // for packs(v0, v1)
      const __m512i sc_b = _mm512_permutexvar_epi16(idx1, sc16);  // for packs(v2, v3)
      const __m128i mn = _mm_cvtsi64_si128(static_cast<int64_t>(mn8));
      // m[g / 2] per 16-sum g, in both 256-bit halves.
      const __m512i mins = _mm512_broadcast_i64x4(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn, mn)));
      __m512i q[4];  // [64] values 64j..64j+63: sub-blocks 2j, 2j+1
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m512i raw = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qs + 32 * j)));
        q[j] = _mm512_and_si512(_mm512_srlv_epi64(raw, nibble_shift), m4);
      }
      if constexpr (kFiveBit) {
        // Bit 2j of qh[l] is the fifth bit of sub-block 2j (low half of
        // q[j]), bit 2j+1 that of sub-block 2j+1 (high half): to bit 4.
        const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qh)));
        const __m512i m_bit4 = _mm512_set1_epi8(0x10);
        const __m512i hi[4] = {_mm512_sllv_epi64(qh, _mm512_set_epi64(3, 3, 3, 3, 4, 4, 4, 4)),
                               _mm512_sllv_epi64(qh, _mm512_set_epi64(1, 1, 1, 1, 2, 2, 2, 2)),
                               _mm512_srlv_epi64(qh, _mm512_set_epi64(1, 1, 1, 1, 0, 0, 0, 0)),
                               _mm512_srlv_epi64(qh, _mm512_set_epi64(3, 3, 3, 3, 2, 2, 2, 2))};
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) q[j] = _mm512_ternarylogic_epi32(hi[j], m_bit4, q[j], kOrAnd);
      }
      // [d x 8 | -dmin x 8]: the scales of the two halves of `both` below.
      const __m512 dd = _mm512_insertf32x8(_mm512_set1_ps(_cvtsh_ss(wb.d)), _mm256_set1_ps(-_cvtsh_ss(wb.dmin)), 1);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const BlockQ8_K& ab = reinterpret_cast<const BlockQ8_K*>(act + t * arb)[b];
        __m512i v[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          v[j] = _mm512_dpbusd_epi32(zero, q[j], _mm512_loadu_si512(ab.qs + 64 * j));
        }
        __m512i s = _mm512_dpwssd_epi32(zero, _mm512_packs_epi32(v[0], v[1]), sc_a);
        s = _mm512_dpwssd_epi32(s, _mm512_packs_epi32(v[2], v[3]), sc_b);
        // Upper 8 lanes: m[s] * (bsums[2s] + bsums[2s+1]); lower 8 lanes: the
        // two halves of s added. One conversion and one FMA for both terms.
        const __m512i sm = _mm512_madd_epi16(
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.bsums))), mins);
        const __m512i both = _mm512_mask_add_epi32(sm, kLowHalf, s, _mm512_shuffle_i64x2(s, s, kSwapHalves));
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(dd, _mm512_set1_ps(ab.d)), _mm512_cvtepi32_ps(both), acc[r][t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) y[t * ys + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

// Integer sum of one block of sixteen 16-value sub-blocks whose unsigned
// values lie in q[0..3] (vector i: values 64i..64i+63, sub-blocks
// 4i..4i+3, one per 128-bit lane), scales laid out by kQ16Idx0/1.
inline __m512i sum_16_subblocks(const __m512i* q, const BlockQ8_K& ab, __m512i sc_a, __m512i sc_b) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i v[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) v[i] = _mm512_dpbusd_epi32(zero, q[i], _mm512_loadu_si512(ab.qs + 64 * i));
  const __m512i s = _mm512_dpwssd_epi32(zero, _mm512_packs_epi32(v[0], v[1]), sc_a);
  return _mm512_dpwssd_epi32(s, _mm512_packs_epi32(v[2], v[3]), sc_b);
}

inline __m512i load_bsums_low(const BlockQ8_K& ab) {
  return _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.bsums)));
}
inline __m512i load_bsums_both(const BlockQ8_K& ab) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ab.bsums)));
}

template <int NR, int NT>
void q6_k_tile(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i m_hi2 = _mm512_set1_epi8(0x30);  // bits 4..5: the two high bits of a value
  // qh holds bits 4..5 of four values per byte (bit pairs 0, 2, 4, 6); these
  // move pairs 0 and 2 (left), 4 and 6 (right) to bits 4..5.
  const __m512i shift_a = _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4);
  const __m512i shift_b = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
  const __m512i idx0 = load_idx(kQ16Idx0), idx1 = load_idx(kQ16Idx1);
  __m512 acc[NR][NT];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < k / kQKK; ++b) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const BlockQ6_K& wb = reinterpret_cast<const BlockQ6_K*>(w + r * wrb)[b];
      prefetch_block<sizeof(BlockQ6_K)>(&wb, NR * wrb);
      const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
      const __m512i sc_a = _mm512_permutexvar_epi16(idx0, _mm512_castsi256_si512(sc));  // packs(v0, v1)
      const __m512i sc_b = _mm512_permutexvar_epi16(idx1, _mm512_castsi256_si512(sc));  // packs(v2, v3)
      // -32 * scale per 16-sum, high half zero: the bias term.
      const __m512i sc_bias = _mm512_zextsi256_si512(_mm256_mullo_epi16(sc, _mm256_set1_epi16(-kQ6Bias)));
      __m512i q[4];  // [64] values 64i..64i+63, 0..63 each: sub-blocks 4i..4i+3
#pragma GCC unroll 4
      for (int h = 0; h < 2; ++h) {
        const __m512i ql = _mm512_loadu_si512(wb.ql + 64 * h);
        const __m512i qh =
            _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.qh + 32 * h)));
        const __m512i hi_a = _mm512_and_si512(_mm512_sllv_epi64(qh, shift_a), m_hi2);
        const __m512i hi_b = _mm512_and_si512(_mm512_srlv_epi64(qh, shift_b), m_hi2);
        q[2 * h] = _mm512_ternarylogic_epi32(ql, m4, hi_a, kOrAnd);
        q[2 * h + 1] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), m4, hi_b, kOrAnd);
      }
      const __m512 d = _mm512_set1_ps(_cvtsh_ss(wb.d));
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const BlockQ8_K& ab = reinterpret_cast<const BlockQ8_K*>(act + t * arb)[b];
        const __m512i s = _mm512_dpwssd_epi32(sum_16_subblocks(q, ab, sc_a, sc_b), load_bsums_low(ab), sc_bias);
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(ab.d)), _mm512_cvtepi32_ps(s), acc[r][t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) y[t * ys + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

// Bits 2j..2j+1 of qs[32h + i] belong to value 128h + 32j + i (Q2_K, Q3_K).
// Vector v = 2h + p gets j = 2p in its low half and j = 2p + 1 in its high
// half, shifted to bits 0..1 (not masked).
inline void two_bit_fields(const uint8_t* qs, __m512i* lo) {
  const __m512i shift0 = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
  const __m512i shift1 = _mm512_set_epi64(6, 6, 6, 6, 4, 4, 4, 4);
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    const __m512i raw = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * h)));
    lo[2 * h] = _mm512_srlv_epi64(raw, shift0);
    lo[2 * h + 1] = _mm512_srlv_epi64(raw, shift1);
  }
}

// The sixteen Q3_K scales minus 32 from their 12 packed bytes: low nibbles
// in bytes 0..7 (sub-blocks 0..7 low, 8..15 high nibble), two high bits per
// sub-block in bytes 8..11 (bit pair j / 4 of byte 8 + j % 4).
inline __m256i q3_k_scales(const uint8_t* packed) {
  constexpr uint32_t kLow4 = 0x0F0F0F0F, kLow2 = 0x03030303;
  constexpr int kScaleBias = 32;
  uint32_t a[3];
  std::memcpy(a, packed, sizeof a);
  const uint32_t s0 = (a[0] & kLow4) | ((a[2] & kLow2) << 4);
  const uint32_t s1 = (a[1] & kLow4) | (((a[2] >> 2) & kLow2) << 4);
  const uint32_t s2 = ((a[0] >> 4) & kLow4) | (((a[2] >> 4) & kLow2) << 4);
  const uint32_t s3 = ((a[1] >> 4) & kLow4) | (((a[2] >> 6) & kLow2) << 4);
  const __m128i bytes = _mm_set_epi32(static_cast<int>(s3), static_cast<int>(s2), static_cast<int>(s1),
                                      static_cast<int>(s0));
  return _mm256_sub_epi16(_mm256_cvtepu8_epi16(bytes), _mm256_set1_epi16(kScaleBias));
}

// Q3_K: value = (2 low bits | high bit << 2) - 4, the high bit from hmask
// (bit 4h + j of hmask[i] for value 128h + 32j + i); the -4 goes through
// the 16-sums.
template <int NR, int NT>
void q3_k_tile(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  constexpr int kBias = 4;
  const __m512i m3 = _mm512_set1_epi8(0x03);
  const __m512i m_bit2 = _mm512_set1_epi8(0x04);
  const __m512i idx0 = load_idx(kQ16Idx0), idx1 = load_idx(kQ16Idx1);
  __m512 acc[NR][NT];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < k / kQKK; ++b) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const BlockQ3_K& wb = reinterpret_cast<const BlockQ3_K*>(w + r * wrb)[b];
      prefetch_block<sizeof(BlockQ3_K)>(&wb, NR * wrb);
      const __m256i sc = q3_k_scales(wb.scales);
      const __m512i sc_a = _mm512_permutexvar_epi16(idx0, _mm512_castsi256_si512(sc));
      const __m512i sc_b = _mm512_permutexvar_epi16(idx1, _mm512_castsi256_si512(sc));
      const __m512i sc_bias = _mm512_zextsi256_si512(_mm256_mullo_epi16(sc, _mm256_set1_epi16(-kBias)));
      __m512i q[4];
      two_bit_fields(wb.qs, q);
      // hmask bits 2v (low half of vector v) and 2v + 1 (high half) to bit 2.
      const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb.hmask)));
      const __m512i hb[4] = {_mm512_sllv_epi64(hm, _mm512_set_epi64(1, 1, 1, 1, 2, 2, 2, 2)),
                             _mm512_srlv_epi64(hm, _mm512_set_epi64(1, 1, 1, 1, 0, 0, 0, 0)),
                             _mm512_srlv_epi64(hm, _mm512_set_epi64(3, 3, 3, 3, 2, 2, 2, 2)),
                             _mm512_srlv_epi64(hm, _mm512_set_epi64(5, 5, 5, 5, 4, 4, 4, 4))};
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) q[v] = _mm512_ternarylogic_epi32(q[v], m3, _mm512_and_si512(hb[v], m_bit2), kOrAnd);
      const __m512 d = _mm512_set1_ps(_cvtsh_ss(wb.d));
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const BlockQ8_K& ab = reinterpret_cast<const BlockQ8_K*>(act + t * arb)[b];
        const __m512i s = _mm512_dpwssd_epi32(sum_16_subblocks(q, ab, sc_a, sc_b), load_bsums_low(ab), sc_bias);
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(ab.d)), _mm512_cvtepi32_ps(s), acc[r][t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) y[t * ys + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

// Q2_K: 2-bit values with a 4-bit scale (low nibble) and min (high nibble)
// per sub-block; the mins go through the 16-sums, as for Q4_K.
template <int NR, int NT>
void q2_k_tile(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  const __m512i m3 = _mm512_set1_epi8(0x03);
  const __m128i m4 = _mm_set1_epi8(0x0F);
  const __m512i idx0 = load_idx(kQ16Idx0), idx1 = load_idx(kQ16Idx1);
  __m512 acc[NR][NT];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < k / kQKK; ++b) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const BlockQ2_K& wb = reinterpret_cast<const BlockQ2_K*>(w + r * wrb)[b];
      prefetch_block<sizeof(BlockQ2_K)>(&wb, NR * wrb);
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales));
      const __m256i sc = _mm256_cvtepu8_epi16(_mm_and_si128(packed, m4));
      const __m512i mins = _mm512_broadcast_i64x4(_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), m4)));
      const __m512i sc_a = _mm512_permutexvar_epi16(idx0, _mm512_castsi256_si512(sc));
      const __m512i sc_b = _mm512_permutexvar_epi16(idx1, _mm512_castsi256_si512(sc));
      __m512i q[4];
      two_bit_fields(wb.qs, q);
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) q[v] = _mm512_and_si512(q[v], m3);
      // [d x 8 | -dmin x 8], as in q45_k_tile.
      const __m512 dd = _mm512_insertf32x8(_mm512_set1_ps(_cvtsh_ss(wb.d)), _mm256_set1_ps(-_cvtsh_ss(wb.dmin)), 1);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const BlockQ8_K& ab = reinterpret_cast<const BlockQ8_K*>(act + t * arb)[b];
        const __m512i s = sum_16_subblocks(q, ab, sc_a, sc_b);
        // Upper 8 lanes: m[2i] bsums[2i] + m[2i+1] bsums[2i+1].
        const __m512i sm = _mm512_madd_epi16(load_bsums_both(ab), mins);
        const __m512i both = _mm512_mask_add_epi32(sm, kLowHalf, s, _mm512_shuffle_i64x2(s, s, kSwapHalves));
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(dd, _mm512_set1_ps(ab.d)), _mm512_cvtepi32_ps(both), acc[r][t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) y[t * ys + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

using TileFn = void (*)(const uint8_t*, size_t, const uint8_t*, size_t, int64_t, float*, int64_t);

template <template <int, int> class K>
TileFn pick(int64_t nr, int64_t nt) {
  static const TileFn table[4][4] = {
      {K<1, 1>::run, K<1, 2>::run, K<1, 3>::run, K<1, 4>::run},
      {K<2, 1>::run, K<2, 2>::run, K<2, 3>::run, K<2, 4>::run},
      {K<3, 1>::run, K<3, 2>::run, K<3, 3>::run, K<3, 4>::run},
      {K<4, 1>::run, K<4, 2>::run, K<4, 3>::run, K<4, 4>::run},
  };
  return table[nr - 1][nt - 1];
}

template <int NR, int NT>
struct Q4KTile {
  static void run(const uint8_t* w, size_t wrb, const uint8_t* a, size_t arb, int64_t k, float* y, int64_t ys) {
    q45_k_tile<BlockQ4_K, NR, NT>(w, wrb, a, arb, k, y, ys);
  }
};
template <int NR, int NT>
struct Q5KTile {
  static void run(const uint8_t* w, size_t wrb, const uint8_t* a, size_t arb, int64_t k, float* y, int64_t ys) {
    q45_k_tile<BlockQ5_K, NR, NT>(w, wrb, a, arb, k, y, ys);
  }
};
template <int NR, int NT>
struct Q3KTile {
  static void run(const uint8_t* w, size_t wrb, const uint8_t* a, size_t arb, int64_t k, float* y, int64_t ys) {
    q3_k_tile<NR, NT>(w, wrb, a, arb, k, y, ys);
  }
};
template <int NR, int NT>
struct Q2KTile {
  static void run(const uint8_t* w, size_t wrb, const uint8_t* a, size_t arb, int64_t k, float* y, int64_t ys) {
    q2_k_tile<NR, NT>(w, wrb, a, arb, k, y, ys);
  }
};
template <int NR, int NT>
struct Q6KTile {
  static void run(const uint8_t* w, size_t wrb, const uint8_t* a, size_t arb, int64_t k, float* y, int64_t ys) {
    q6_k_tile<NR, NT>(w, wrb, a, arb, k, y, ys);
  }
};

template <template <int, int> class K>
void tile(const uint8_t* w, size_t wrb, int64_t nr, const uint8_t* a, size_t arb, int64_t nt, int64_t k, float* y,
          int64_t ys) {
  pick<K>(nr, nt)(w, wrb, a, arb, k, y, ys);
}

template <template <int, int> class K>
float dot(const void* w_row, const void* act_row, int64_t k) {
  float y;
  K<1, 1>::run(static_cast<const uint8_t*>(w_row), 0, static_cast<const uint8_t*>(act_row), 0, k, &y, 1);
  return y;
}

const QuantDot kQ4_K{ActQuant::Q8_K, q8_k_row_bytes, quantize_q8_k_avx512, dot<Q4KTile>, tile<Q4KTile>};
const QuantDot kQ2_K{ActQuant::Q8_K, q8_k_row_bytes, quantize_q8_k_avx512, dot<Q2KTile>, tile<Q2KTile>};
const QuantDot kQ3_K{ActQuant::Q8_K, q8_k_row_bytes, quantize_q8_k_avx512, dot<Q3KTile>, tile<Q3KTile>};
const QuantDot kQ5_K{ActQuant::Q8_K, q8_k_row_bytes, quantize_q8_k_avx512, dot<Q5KTile>, tile<Q5KTile>};
const QuantDot kQ6_K{ActQuant::Q8_K, q8_k_row_bytes, quantize_q8_k_avx512, dot<Q6KTile>, tile<Q6KTile>};

}  // namespace

const QuantDot* quant_dot_k_avx512(TensorType type) {
  switch (type) {
    case TensorType::Q2_K:
      return &kQ2_K;
    case TensorType::Q3_K:
      return &kQ3_K;
    case TensorType::Q4_K:
      return &kQ4_K;
    case TensorType::Q5_K:
      return &kQ5_K;
    case TensorType::Q6_K:
      return &kQ6_K;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
