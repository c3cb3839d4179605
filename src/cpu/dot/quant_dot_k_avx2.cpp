// AVX2 dot products of K-quant weight rows (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)
// with Q8_K activations, for CPUs without AVX-512 (which otherwise used the
// scalar reference of quant_dot_ref.cpp).
//
// Integer part of a block (exact, so its summation order is free): the
// weights are decoded to unsigned bytes (Q2_K 0..3, Q3_K 0..7, Q4_K 0..15,
// Q5_K 0..31, Q6_K 0..63), multiplied by the signed activations with
// vpmaddubsw (a pair sum stays below 2 * 63 * 128 < 2^15), and the
// sub-block scales applied by vpmaddwd. Offsets (Q2_K/Q4_K/Q5_K mins, the
// Q3_K bias of 4, the Q6_K bias of 32) go through the activations' 16-sums.
//
// Float part: per block, exactly the reference's expression
//   sum += d * a.d * sumi - dmin * a.d * summ
// evaluated left to right in float, the products rounded before the
// subtraction and the sum (no fused multiply-add: this file is compiled with
// FMA, the reference without), so the results equal the reference's bit
// for bit. The f16 scales are widened by F16C, exactly.
//
// Tiles of up to 4 rows x 4 tokens (quant_dot.h) decode each weight block
// once per row and reuse it for every token; each output still adds its
// block terms in block order, so tiles, dots and the reference agree.
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

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

constexpr int kSubBlocks4K = 8;    // Q4_K / Q5_K: sub-blocks of 32
constexpr int kBytesPerVec = 32;   // one __m256i
constexpr int kQ6Bias = 32;
constexpr int kQ3Bias = 4;
constexpr int kQ3ScaleBias = 32;
constexpr uint8_t kLow4 = 0x0F;
constexpr uint8_t kLow2 = 0x03;
constexpr uint8_t kBit4 = 0x10;
constexpr uint8_t kBit2 = 0x04;

// Sum of the eight int32 lanes.
inline int32_t hsum_epi32(__m256i v) {
  __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(t);
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Eight int32 lanes summing to sum_j u_j a_j * scale over 32 bytes:
// u unsigned (<= 63), a signed, `scale` one int16 per pair of bytes.
inline __m256i scaled_dot(__m256i u, __m256i a, __m256i scale) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), scale);
}

// Sub-block scales for the 32-value vectors of Q2_K, Q3_K, Q6_K: `scales`
// holds the sixteen scales as int16; vector v (values 32v..32v+31) gets
// [scale 2v x 8 | scale 2v+1 x 8] (one per pair of bytes in each 16-byte half).
struct PairScales {
  static constexpr int kLowTwice = 0x00, kHighTwice = 0x11;  // vperm2i128: low / high 128 bits in both lanes
  __m256i low8, high8;  // scales 0..7 and 8..15, in both 128-bit lanes
  explicit PairScales(__m256i scales)
      : low8(_mm256_permute2x128_si256(scales, scales, kLowTwice)),
        high8(_mm256_permute2x128_si256(scales, scales, kHighTwice)) {}
  __m256i operator()(int v) const {
    const int j = v % 4;  // the pair within its eight scales
    const char a = static_cast<char>(4 * j), b = static_cast<char>(4 * j + 1);
    const char c = static_cast<char>(4 * j + 2), d = static_cast<char>(4 * j + 3);
    const __m256i pick = _mm256_setr_epi8(a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b,  //
                                          c, d, c, d, c, d, c, d, c, d, c, d, c, d, c, d);
    return _mm256_shuffle_epi8(v < 4 ? low8 : high8, pick);
  }
};

// The float step of one block, as the reference computes it. The products
// are pinned (asm barrier) so that the compiler cannot fuse them into the
// subtraction.
inline float block_term(float d, float ad, int32_t sumi) {
  float p = d * ad;
  p = p * static_cast<float>(sumi);
  asm("" : "+x"(p));
  return p;
}

// The eight 6-bit scales and mins of a Q4_K/Q5_K block (12 packed bytes:
// sub-blocks 0..3 in the low 6 bits of bytes 0..3 (scales) and 4..7 (mins);
// sub-blocks 4..7 in the nibbles of bytes 8..11 plus the top two bits of
// bytes 0..3 (scales) and 4..7 (mins)).
inline void unpack_scales_mins_4k(const uint8_t* packed, uint8_t* sc, uint8_t* mn) {
  constexpr uint32_t kMask6 = 0x3F3F3F3F, kMask4 = 0x0F0F0F0F, kMask2 = 0x03030303;
  constexpr int kHighShift = 6, kNibble = 4;
  uint32_t u[3];
  std::memcpy(u, packed, sizeof u);
  const uint32_t sc_lo = u[0] & kMask6;
  const uint32_t mn_lo = u[1] & kMask6;
  const uint32_t sc_hi = (u[2] & kMask4) | (((u[0] >> kHighShift) & kMask2) << kNibble);
  const uint32_t mn_hi = ((u[2] >> kNibble) & kMask4) | (((u[1] >> kHighShift) & kMask2) << kNibble);
  std::memcpy(sc, &sc_lo, 4);
  std::memcpy(sc + 4, &sc_hi, 4);
  std::memcpy(mn, &mn_lo, 4);
  std::memcpy(mn + 4, &mn_hi, 4);
}

// Each kernel below decodes one weight block (decode) and returns the
// block's float contribution for one activation block (term), as the
// reference computes it; tiles decode a block once per row and reuse it for
// every token of the tile.

// Q4_K and Q5_K (Q5_K: the fifth bit of element l of sub-block sb is bit
// sb of qh[l]). Sub-blocks 2j and 2j+1 are the low and high nibbles of
// qs[32j .. 32j+31].
template <bool kFiveBit>
struct Q45K {
  using Block = std::conditional_t<kFiveBit, BlockQ5_K, BlockQ4_K>;
  __m256i u[kSubBlocks4K];  // [8][32 x uint8]: sub-block sb's values
  uint8_t sc[kSubBlocks4K];
  __m256i mins;  // [16 x int16]: m[g / 2] for 16-sum g
  float d, dmin;

  void decode(const Block& wb) {
    const __m256i m4 = _mm256_set1_epi8(static_cast<char>(kLow4));
    const __m256i m_bit4 = _mm256_set1_epi8(static_cast<char>(kBit4));
    uint8_t mn[kSubBlocks4K];
    unpack_scales_mins_4k(wb.scales, sc, mn);
    [[maybe_unused]] __m256i qh;
    if constexpr (kFiveBit) qh = load256(wb.qh);
#pragma GCC unroll 4
    for (int j = 0; j < kSubBlocks4K / 2; ++j) {
      const __m256i raw = load256(wb.qs + kBytesPerVec * j);
      __m256i lo = _mm256_and_si256(raw, m4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
      if constexpr (kFiveBit) {
        // Bit 2j of qh to bit 4 (sub-block 2j), then bit 2j+1 (sub-block 2j+1).
        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(qh, 4), m_bit4));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(qh, 3), m_bit4));
        qh = _mm256_srli_epi16(qh, 2);
      }
      u[2 * j] = lo;
      u[2 * j + 1] = hi;
    }
    const __m128i mn8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn));
    mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8));
    d = _cvtsh_ss(wb.d);
    dmin = _cvtsh_ss(wb.dmin);
  }

  float term(const BlockQ8_K& ab) const {
    __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int sb = 0; sb < kSubBlocks4K; ++sb) {
      acc = _mm256_add_epi32(acc, scaled_dot(u[sb], load256(ab.qs + kBytesPerVec * sb), _mm256_set1_epi16(sc[sb])));
    }
    const int32_t sumi = hsum_epi32(acc);
    const int32_t summ = hsum_epi32(_mm256_madd_epi16(load256(ab.bsums), mins));
    return block_term(d, ab.d, sumi) - block_term(dmin, ab.d, summ);
  }
};

// Q6_K: values 128h + l, 128h + 32 + l, 128h + 64 + l, 128h + 96 + l
// (l < 32) take low nibble of ql[64h + l], low of ql[64h + 32 + l], high of
// ql[64h + l], high of ql[64h + 32 + l], and bit pairs 0, 2, 4, 6 of
// qh[32h + l] as bits 4..5; the value is that minus 32.
struct Q6K {
  using Block = BlockQ6_K;
  __m256i u[8];   // [8][32 x uint8]: values 32v..32v+31 (sub-blocks 2v, 2v+1)
  __m256i sc16;   // [16 x int16] the scales
  float d;

  void decode(const Block& wb) {
    const __m256i m4 = _mm256_set1_epi8(static_cast<char>(kLow4));
    const __m256i m_hi2 = _mm256_set1_epi8(0x30);  // bits 4..5
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load256(wb.ql + 64 * h);
      const __m256i ql1 = load256(wb.ql + 64 * h + kBytesPerVec);
      const __m256i qh = load256(wb.qh + kBytesPerVec * h);
      u[4 * h] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m_hi2));
      u[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m_hi2));
      u[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m_hi2));
      u[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                     _mm256_and_si256(_mm256_srli_epi16(qh, 2), m_hi2));
    }
    sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
    d = _cvtsh_ss(wb.d);
  }

  float term(const BlockQ8_K& ab) const {
    const PairScales scales(sc16);
    __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) {
      acc = _mm256_add_epi32(acc, scaled_dot(u[v], load256(ab.qs + kBytesPerVec * v), scales(v)));
    }
    // The bias: -32 * sum_sb scale[sb] * bsums[sb].
    const int32_t bias = hsum_epi32(_mm256_madd_epi16(load256(ab.bsums), sc16));
    return block_term(d, ab.d, hsum_epi32(acc) - kQ6Bias * bias);
  }
};

// The sixteen Q3_K scales minus 32, as int16. Packed in 12 bytes: the low
// nibbles in bytes 0..7 (sub-blocks 0..7 low, 8..15 high nibble), two high
// bits per sub-block in bytes 8..11 (bit pair sb / 4 of byte 8 + sb % 4).
inline __m256i unpack_scales_3k(const uint8_t* packed) {
  constexpr uint32_t kMask4 = 0x0F0F0F0F, kMask2 = 0x03030303;
  constexpr int kNibble = 4;
  uint32_t u[3];
  std::memcpy(u, packed, sizeof u);
  const uint32_t s0 = (u[0] & kMask4) | ((u[2] & kMask2) << kNibble);                      // sub-blocks 0..3
  const uint32_t s1 = (u[1] & kMask4) | (((u[2] >> 2) & kMask2) << kNibble);               // 4..7
  const uint32_t s2 = ((u[0] >> kNibble) & kMask4) | (((u[2] >> 4) & kMask2) << kNibble);  // 8..11
  const uint32_t s3 = ((u[1] >> kNibble) & kMask4) | (((u[2] >> 6) & kMask2) << kNibble);  // 12..15
  const __m128i bytes =
      _mm_setr_epi32(static_cast<int>(s0), static_cast<int>(s1), static_cast<int>(s2), static_cast<int>(s3));
  return _mm256_sub_epi16(_mm256_cvtepu8_epi16(bytes), _mm256_set1_epi16(kQ3ScaleBias));
}

// Q2_K and Q3_K: value 128h + 32j + i (i < 32) has bits 2j..2j+1 of
// qs[32h + i]; the 32 values of (h, j) are vector v = 4h + j, sub-blocks
// 2v and 2v + 1. Q3_K adds bit 4h + j of hmask[i] as bit 2, and subtracts 4
// (through the 16-sums).
template <bool kThreeBit>
struct Q23K {
  using Block = std::conditional_t<kThreeBit, BlockQ3_K, BlockQ2_K>;
  __m256i u[8];  // [8][32 x uint8]
  __m256i sc16;  // [16 x int16] the scales (Q3_K: minus 32)
  __m256i mins;  // [16 x int16] the mins (Q2_K)
  float d, dmin;

  void decode(const Block& wb) {
    const __m256i m2 = _mm256_set1_epi8(static_cast<char>(kLow2));
    const __m256i m_bit2 = _mm256_set1_epi8(static_cast<char>(kBit2));
    [[maybe_unused]] __m256i hm;
    if constexpr (kThreeBit) hm = load256(wb.hmask);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i raw = load256(wb.qs + kBytesPerVec * h);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        __m256i v = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * j), m2);
        if constexpr (kThreeBit) {
          // Bit 4h + j of hmask to bit 2 (hm is shifted right by one per vector).
          v = _mm256_or_si256(v, _mm256_and_si256(_mm256_slli_epi16(hm, 2), m_bit2));
          hm = _mm256_srli_epi16(hm, 1);
        }
        u[4 * h + j] = v;
      }
    }
    d = _cvtsh_ss(wb.d);
    if constexpr (kThreeBit) {
      sc16 = unpack_scales_3k(wb.scales);
    } else {
      const __m128i m4 = _mm_set1_epi8(static_cast<char>(kLow4));
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales));
      sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, m4));
      mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), m4));
      dmin = _cvtsh_ss(wb.dmin);
    }
  }

  float term(const BlockQ8_K& ab) const {
    const PairScales scales(sc16);
    __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) {
      acc = _mm256_add_epi32(acc, scaled_dot(u[v], load256(ab.qs + kBytesPerVec * v), scales(v)));
    }
    const __m256i bsums = load256(ab.bsums);
    if constexpr (kThreeBit) {
      const int32_t bias = hsum_epi32(_mm256_madd_epi16(bsums, sc16));
      return block_term(d, ab.d, hsum_epi32(acc) - kQ3Bias * bias);
    } else {
      const int32_t summ = hsum_epi32(_mm256_madd_epi16(bsums, mins));
      return block_term(d, ab.d, hsum_epi32(acc)) - block_term(dmin, ab.d, summ);
    }
  }
};

// y[t * ys + r] = the dot of weight row r with activation row t: per output,
// the block terms added in block order (so every tile shape equals the dot).
template <typename Kernel, int NR, int NT>
void k_tile(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  using Block = typename Kernel::Block;
  float sum[NR][NT] = {};
  for (int64_t b = 0; b < k / kQKK; ++b) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      Kernel kern;
      kern.decode(reinterpret_cast<const Block*>(w + r * wrb)[b]);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) sum[r][t] += kern.term(reinterpret_cast<const BlockQ8_K*>(act + t * arb)[b]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = sum[r][t];
  }
}

using TileFn = void (*)(const uint8_t*, size_t, const uint8_t*, size_t, int64_t, float*, int64_t);
constexpr int kMaxTile = 4;  // rows and tokens (quant_dot.h)

template <typename Kernel>
void tile(const uint8_t* w, size_t wrb, int64_t nr, const uint8_t* a, size_t arb, int64_t nt, int64_t k, float* y,
          int64_t ys) {
  static const TileFn table[kMaxTile][kMaxTile] = {
      {k_tile<Kernel, 1, 1>, k_tile<Kernel, 1, 2>, k_tile<Kernel, 1, 3>, k_tile<Kernel, 1, 4>},
      {k_tile<Kernel, 2, 1>, k_tile<Kernel, 2, 2>, k_tile<Kernel, 2, 3>, k_tile<Kernel, 2, 4>},
      {k_tile<Kernel, 3, 1>, k_tile<Kernel, 3, 2>, k_tile<Kernel, 3, 3>, k_tile<Kernel, 3, 4>},
      {k_tile<Kernel, 4, 1>, k_tile<Kernel, 4, 2>, k_tile<Kernel, 4, 3>, k_tile<Kernel, 4, 4>},
  };
  table[nr - 1][nt - 1](w, wrb, a, arb, k, y, ys);
}

template <typename Kernel>
float dot(const void* w_row, const void* act_row, int64_t k) {
  float y;
  k_tile<Kernel, 1, 1>(static_cast<const uint8_t*>(w_row), 0, static_cast<const uint8_t*>(act_row), 0, k, &y, 1);
  return y;
}

// The reference's activation format, with the AVX2 quantizer (the same
// bits) and these products.
template <typename Kernel>
QuantDot with_kernel(TensorType type) {
  QuantDot q = *quant_dot_ref(type);
  q.quantize = quantize_q8_k_avx2;
  q.dot = dot<Kernel>;
  q.tile = tile<Kernel>;
  return q;
}

}  // namespace

const QuantDot* quant_dot_k_avx2(TensorType type) {
  static const QuantDot q2_k = with_kernel<Q23K<false>>(TensorType::Q2_K);
  static const QuantDot q3_k = with_kernel<Q23K<true>>(TensorType::Q3_K);
  static const QuantDot q4_k = with_kernel<Q45K<false>>(TensorType::Q4_K);
  static const QuantDot q5_k = with_kernel<Q45K<true>>(TensorType::Q5_K);
  static const QuantDot q6_k = with_kernel<Q6K>(TensorType::Q6_K);
  switch (type) {
    case TensorType::Q2_K:
      return &q2_k;
    case TensorType::Q3_K:
      return &q3_k;
    case TensorType::Q4_K:
      return &q4_k;
    case TensorType::Q5_K:
      return &q5_k;
    case TensorType::Q6_K:
      return &q6_k;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
