// NEON (aarch64, dot product extension) dot products of K-quant weight rows
// (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) with Q8_K activations.
//
// Integer part of a block (exact, so its summation order is free): each
// 16-value sub-block run of weights is decoded to signed bytes (Q4_K 0..15,
// Q5_K 0..31, Q2_K 0..3, Q3_K -4..3, Q6_K -32..31), multiplied with the
// activations by SDOT (vdotq_s32: four int8 products into each int32 lane),
// and the sub-block scale applied to the four lanes (vmlaq_n_s32). Q3_K and
// Q6_K subtract their offsets from the values, as the reference does, so the
// activations' 16-sums are used only where the reference uses them (the
// Q2_K/Q4_K/Q5_K mins), widened to int32 before any addition.
//
// Float part: per block, exactly the reference's expression
//   sum += d * a.d * sumi - dmin * a.d * summ
// evaluated left to right in scalar float; the aarch64 build compiles with
// -ffp-contract=off, so no product is fused into the subtraction or the sum.
// The f16 scales are widened exactly by FCVTL. So the results equal
// quant_dot_ref.cpp's bit for bit.
//
// Tiles of up to 4 rows x 4 tokens (quant_dot.h) decode each weight block
// once per row and reuse it for every token; each output still adds its
// block terms in block order, so tiles, dots and the reference agree.
// The activations are quantized by quantize_q8_k_neon (act_quant_neon.cpp),
// bit-identical to the reference quantizer.
#include <arm_neon.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/act_quant.h"
#include "cpu/quant_dot_k.h"
#include "quant/blocks.h"
#include "quant/dequant_ref.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_K;
using quant::kQKK;

constexpr int kLanes = 16;        // int8 values in one NEON register (and a Q2/Q3/Q6_K sub-block)
constexpr int kSubBlocks4K = 8;   // Q4_K / Q5_K: sub-blocks of 32
constexpr int kRuns = 16;         // runs of 16 values in a block (Q2_K / Q3_K / Q6_K: the sub-blocks)
constexpr int kSub4K = 32;
constexpr int8_t kQ6Bias = 32;
constexpr int8_t kQ3Bias = 4;
constexpr int kQ3ScaleBias = 32;
constexpr uint8_t kLow4 = 0x0F;
constexpr uint8_t kLow2 = 0x03;
constexpr uint8_t kBit4 = 0x10;
constexpr uint8_t kBit2 = 0x04;
constexpr uint8_t kBits45 = 0x30;

// f16 bit pattern -> f32 (exact).
inline float widen_f16(uint16_t h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }

inline int8x16_t as_s8(uint8x16_t v) { return vreinterpretq_s8_u8(v); }

// Four int32 lanes summing to sum_j w_j a_j over 16 bytes (exact).
inline int32x4_t dot16(int8x16_t w, const int8_t* a) { return vdotq_s32(vdupq_n_s32(0), w, vld1q_s8(a)); }

// [8 x uint8] -> two [4 x int32] (values 0..255, exact).
inline int32x4x2_t widen_u8x8(uint8x8_t v) {
  const uint16x8_t w = vmovl_u8(v);
  return {vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(w))), vreinterpretq_s32_u32(vmovl_u16(vget_high_u16(w)))};
}

// The eight 6-bit scales and mins of a Q4_K/Q5_K block (12 packed bytes:
// sub-blocks 0..3 in the low 6 bits of bytes 0..3 (scales) and 4..7 (mins);
// sub-blocks 4..7 in the nibbles of bytes 8..11 plus the top two bits of
// bytes 0..3 (scales) and 4..7 (mins)), four sub-blocks per 32-bit word.
inline void unpack_scales_mins_4k(const uint8_t* packed, uint8_t* sc, uint8_t* mn) {
  constexpr uint32_t kMask6 = 0x3F3F3F3F, kMask4 = 0x0F0F0F0F, kMask2 = 0x03030303;
  constexpr int kHighShift = 6, kNibble = 4;
  uint32_t u[3];
  std::memcpy(u, packed, sizeof u);
  const uint32_t sc_lo = u[0] & kMask6;
  const uint32_t mn_lo = u[1] & kMask6;
  const uint32_t sc_hi = (u[2] & kMask4) | (((u[0] >> kHighShift) & kMask2) << kNibble);
  const uint32_t mn_hi = ((u[2] >> kNibble) & kMask4) | (((u[1] >> kHighShift) & kMask2) << kNibble);
  std::memcpy(sc, &sc_lo, sizeof sc_lo);
  std::memcpy(sc + 4, &sc_hi, sizeof sc_hi);
  std::memcpy(mn, &mn_lo, sizeof mn_lo);
  std::memcpy(mn + 4, &mn_hi, sizeof mn_hi);
}

// Each kernel below decodes one weight block to sixteen registers of signed
// bytes (run r: values 16r..16r+15) plus its scales (decode), and returns the
// block's float contribution for one activation block (term), as the
// reference computes it; tiles decode a block once per row and reuse it for
// every token of the tile.

// Q4_K and Q5_K: sub-blocks 2j and 2j+1 are the low and high nibbles of
// qs[32j .. 32j+31]; Q5_K adds 16 where bit sb of qh[l] is set.
template <bool kFiveBit>
struct Q45K {
  using Block = std::conditional_t<kFiveBit, BlockQ5_K, BlockQ4_K>;
  int8x16_t q[kRuns];  // [16][16 x int8]: values 0..31
  uint8_t sc[kSubBlocks4K];
  int32x4x2_t mins;  // [8 x int32]
  float d, dmin;

  void decode(const Block& w) {
    uint8_t mn[kSubBlocks4K];
    unpack_scales_mins_4k(w.scales, sc, mn);
    mins = widen_u8x8(vld1_u8(mn));
    const uint8x16_t m4 = vdupq_n_u8(kLow4);
    [[maybe_unused]] uint8x16_t qh0, qh1;  // [16 x uint8] each: qh[0..15], qh[16..31]
    if constexpr (kFiveBit) {
      qh0 = vld1q_u8(w.qh);
      qh1 = vld1q_u8(w.qh + kLanes);
    }
#pragma GCC unroll 4
    for (int j = 0; j < kSubBlocks4K / 2; ++j) {
      const uint8x16_t raw0 = vld1q_u8(w.qs + kSub4K * j);
      const uint8x16_t raw1 = vld1q_u8(w.qs + kSub4K * j + kLanes);
      uint8x16_t lo0 = vandq_u8(raw0, m4), lo1 = vandq_u8(raw1, m4);
      uint8x16_t hi0 = vshrq_n_u8(raw0, 4), hi1 = vshrq_n_u8(raw1, 4);
      if constexpr (kFiveBit) {
        // Bit 2j of qh to bit 4 (sub-block 2j), bit 2j+1 (sub-block 2j+1).
        const uint8x16_t b4 = vdupq_n_u8(kBit4);
        lo0 = vorrq_u8(lo0, vandq_u8(vshlq_n_u8(qh0, 4), b4));
        lo1 = vorrq_u8(lo1, vandq_u8(vshlq_n_u8(qh1, 4), b4));
        hi0 = vorrq_u8(hi0, vandq_u8(vshlq_n_u8(qh0, 3), b4));
        hi1 = vorrq_u8(hi1, vandq_u8(vshlq_n_u8(qh1, 3), b4));
        qh0 = vshrq_n_u8(qh0, 2);
        qh1 = vshrq_n_u8(qh1, 2);
      }
      q[4 * j] = as_s8(lo0);  // sub-block 2j
      q[4 * j + 1] = as_s8(lo1);
      q[4 * j + 2] = as_s8(hi0);  // sub-block 2j + 1
      q[4 * j + 3] = as_s8(hi1);
    }
    d = widen_f16(w.d);
    dmin = widen_f16(w.dmin);
  }

  float term(const BlockQ8_K& a) const {
    int32x4_t acc = vdupq_n_s32(0);
#pragma GCC unroll 8
    for (int sb = 0; sb < kSubBlocks4K; ++sb) {
      const int32x4_t p = vdotq_s32(dot16(q[2 * sb], a.qs + kSub4K * sb), q[2 * sb + 1],
                                    vld1q_s8(a.qs + kSub4K * sb + kLanes));
      acc = vmlaq_n_s32(acc, p, sc[sb]);
    }
    const int32_t sumi = vaddvq_s32(acc);
    // summ = sum_sb m[sb] (bsums[2sb] + bsums[2sb+1]), the pair sums in int32.
    const int32x4_t pairs0 = vpaddlq_s16(vld1q_s16(a.bsums));      // sub-blocks 0..3
    const int32x4_t pairs1 = vpaddlq_s16(vld1q_s16(a.bsums + 8));  // 4..7
    const int32_t summ = vaddvq_s32(vmlaq_s32(vmulq_s32(pairs0, mins.val[0]), pairs1, mins.val[1]));
    return d * a.d * static_cast<float>(sumi) - dmin * a.d * static_cast<float>(summ);
  }
};

// Sixteen runs of 16 values with one int8 scale each: sumi = sum_r scale[r] * (q[r] . a[r]).
inline int32_t scaled_runs(const int8x16_t* q, const int8_t* scales, const BlockQ8_K& a) {
  int32x4_t acc = vdupq_n_s32(0);
#pragma GCC unroll 16
  for (int r = 0; r < kRuns; ++r) acc = vmlaq_n_s32(acc, dot16(q[r], a.qs + kLanes * r), scales[r]);
  return vaddvq_s32(acc);
}

// Q6_K: values 128h + l, 128h + 32 + l, 128h + 64 + l, 128h + 96 + l
// (l < 32) take the low nibble of ql[64h + l], low of ql[64h + 32 + l], high
// of ql[64h + l], high of ql[64h + 32 + l], and bit pairs 0, 2, 4, 6 of
// qh[32h + l] as bits 4..5; the value is that minus 32.
struct Q6K {
  using Block = BlockQ6_K;
  int8x16_t q[kRuns];  // [16][16 x int8]: values -32..31
  int8_t scales[kRuns];
  float d;

  void decode(const Block& w) {
    const uint8x16_t m4 = vdupq_n_u8(kLow4);
    const uint8x16_t m45 = vdupq_n_u8(kBits45);
    const int8x16_t bias = vdupq_n_s8(kQ6Bias);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {  // l in 0..15, then 16..31
        const int l = kLanes * half;
        const uint8x16_t ql0 = vld1q_u8(w.ql + 64 * h + l);
        const uint8x16_t ql1 = vld1q_u8(w.ql + 64 * h + 32 + l);
        const uint8x16_t qh = vld1q_u8(w.qh + 32 * h + l);
        // Run 8h + 2v + half holds values 128h + 32v + l.
        q[8 * h + half] = vsubq_s8(as_s8(vorrq_u8(vandq_u8(ql0, m4), vandq_u8(vshlq_n_u8(qh, 4), m45))), bias);
        q[8 * h + 2 + half] = vsubq_s8(as_s8(vorrq_u8(vandq_u8(ql1, m4), vandq_u8(vshlq_n_u8(qh, 2), m45))), bias);
        q[8 * h + 4 + half] = vsubq_s8(as_s8(vorrq_u8(vshrq_n_u8(ql0, 4), vandq_u8(qh, m45))), bias);
        q[8 * h + 6 + half] =
            vsubq_s8(as_s8(vorrq_u8(vshrq_n_u8(ql1, 4), vandq_u8(vshrq_n_u8(qh, 2), m45))), bias);
      }
    }
    std::memcpy(scales, w.scales, sizeof scales);
    d = widen_f16(w.d);
  }

  float term(const BlockQ8_K& a) const { return d * a.d * static_cast<float>(scaled_runs(q, scales, a)); }
};

// Q2_K and Q3_K: value 128h + 32j + i (i < 32) has bits 2j..2j+1 of
// qs[32h + i]; values 128h + 32j + 0..15 are sub-block (run) 8h + 2j,
// 16..31 run 8h + 2j + 1. Q3_K: bit 4h + j of hmask[i] is bit 2, and the
// value is that minus 4; 6-bit scales minus 32. Q2_K: 4-bit scale (low
// nibble) and min (high nibble) per sub-block.
template <bool kThreeBit>
struct Q23K {
  using Block = std::conditional_t<kThreeBit, BlockQ3_K, BlockQ2_K>;
  int8x16_t q[kRuns];  // [16][16 x int8]: Q2_K 0..3, Q3_K -4..3
  int8_t scales[kRuns];
  int16x8x2_t mins;  // [16 x int16] (Q2_K)
  float d, dmin;

  void decode(const Block& w) {
    if constexpr (kThreeBit) {
      quant::ref::q3_k_unpack_scales(w.scales, scales);
      for (auto& s : scales) s = static_cast<int8_t>(s - kQ3ScaleBias);
    } else {
      const uint8x16_t packed = vld1q_u8(w.scales);
      vst1q_s8(scales, as_s8(vandq_u8(packed, vdupq_n_u8(kLow4))));
      const uint8x16_t m = vshrq_n_u8(packed, 4);
      mins = {vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(m))), vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(m)))};
      dmin = widen_f16(w.dmin);
    }
    const uint8x16_t m2 = vdupq_n_u8(kLow2);
    [[maybe_unused]] uint8x16_t hm0, hm1;  // hmask[0..15], [16..31], shifted right one bit per j
    if constexpr (kThreeBit) {
      hm0 = vld1q_u8(w.hmask);
      hm1 = vld1q_u8(w.hmask + kLanes);
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      uint8x16_t raw0 = vld1q_u8(w.qs + 32 * h);
      uint8x16_t raw1 = vld1q_u8(w.qs + 32 * h + kLanes);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        int8x16_t v0 = as_s8(vandq_u8(raw0, m2)), v1 = as_s8(vandq_u8(raw1, m2));
        if constexpr (kThreeBit) {
          const uint8x16_t b2 = vdupq_n_u8(kBit2);
          const int8x16_t bias = vdupq_n_s8(kQ3Bias);
          v0 = vsubq_s8(vorrq_s8(v0, as_s8(vandq_u8(vshlq_n_u8(hm0, 2), b2))), bias);
          v1 = vsubq_s8(vorrq_s8(v1, as_s8(vandq_u8(vshlq_n_u8(hm1, 2), b2))), bias);
          hm0 = vshrq_n_u8(hm0, 1);
          hm1 = vshrq_n_u8(hm1, 1);
        }
        raw0 = vshrq_n_u8(raw0, 2);
        raw1 = vshrq_n_u8(raw1, 2);
        q[8 * h + 2 * j] = v0;
        q[8 * h + 2 * j + 1] = v1;
      }
    }
    d = widen_f16(w.d);
  }

  float term(const BlockQ8_K& a) const {
    const int32_t sumi = scaled_runs(q, scales, a);
    if constexpr (kThreeBit) {
      return d * a.d * static_cast<float>(sumi);
    } else {
      // summ = sum_sb min[sb] * bsums[sb], products widened to int32.
      const int16x8_t bs0 = vld1q_s16(a.bsums), bs1 = vld1q_s16(a.bsums + 8);
      int32x4_t m = vmull_s16(vget_low_s16(mins.val[0]), vget_low_s16(bs0));
      m = vmlal_s16(m, vget_high_s16(mins.val[0]), vget_high_s16(bs0));
      m = vmlal_s16(m, vget_low_s16(mins.val[1]), vget_low_s16(bs1));
      m = vmlal_s16(m, vget_high_s16(mins.val[1]), vget_high_s16(bs1));
      const int32_t summ = vaddvq_s32(m);
      return d * a.d * static_cast<float>(sumi) - dmin * a.d * static_cast<float>(summ);
    }
  }
};

// y[t * ys + r] = the dot of weight row r with activation row t: per output,
// the block terms added in block order, as the reference adds them (so
// every tile shape equals the dot and the reference).
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

// The reference's activation format, with the NEON quantizer and these products.
template <typename Kernel>
QuantDot with_kernel(TensorType type) {
  QuantDot q = *quant_dot_ref(type);
  q.quantize = quantize_q8_k_neon;
  q.dot = dot<Kernel>;
  q.tile = tile<Kernel>;
  return q;
}

}  // namespace

const QuantDot* quant_dot_k_neon(TensorType type) {
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
