// NEON decoders of quantized weight blocks to signed bytes, shared by the
// dot-product kernels (quant_dot_neon.cpp, quant_dot_k_neon.cpp) and the
// int8 matrix-multiply ones (quant_dot_neon_i8mm.cpp). Included only by
// *_neon*.cpp files. Everything here has internal linkage (an unnamed
// namespace): the files that include it are compiled for different
// extensions, and one shared inline definition could otherwise be linked
// from the file built with +i8mm into code that runs on CPUs without it.
//
// Q4_0 / Q8_0 (blocks of 32): Q40Block / Q80Block give a block's values as
// two registers (elements 0..15, 16..31) and its f16 scale.
//
// K types and IQ4_XS (blocks of 256): a Kernel decodes one block to sixteen
// registers q[r] of signed bytes (run r: elements 16r .. 16r+15) plus its
// scales. Integer part of a block (exact, so its summation order is free):
//   sumi = sum_g scale(g) * (q . a over the kRunsPerScale runs of group g)
// and for the types with mins (Q2_K, Q4_K, Q5_K) summ(a), the mins times
// the activations' 16-sums. Float part, exactly the reference's expression
// (quant_dot_ref.cpp) evaluated left to right:
//   d * a.d * sumi [- dmin * a.d * summ]
// The aarch64 build compiles with -ffp-contract=off, so no product is fused
// into the subtraction or the sum; the f16 scales are widened exactly.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/dequant_ref.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu::neon {
namespace {

using quant::BlockIQ4_XS;
using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ4_0;
using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_0;
using quant::BlockQ8_K;

constexpr int kLanes = 16;  // int8 values in one NEON register (and a Q2/Q3/Q6_K sub-block)
constexpr int kRuns = 16;   // runs of 16 values in a block of 256
constexpr uint8_t kLow4 = 0x0F;

// f16 bit pattern -> f32 (exact).
inline float widen_f16(uint16_t h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }

// f16 bit patterns [4] -> f32 [4] (exact).
inline float32x4_t widen_f16x4(const uint16_t* bits) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(bits))); }

inline int8x16_t as_s8(uint8x16_t v) { return vreinterpretq_s8_u8(v); }

// ---------------------------------------------------------------- Q4_0 / Q8_0

// Q4_0: elements 0..15 are the low nibbles of qs, 16..31 the high ones, minus 8.
struct Q40Block {
  using Block = BlockQ4_0;
  static int8x16x2_t values(const Block& w) {
    constexpr int8_t kOffset = 8;
    const uint8x16_t q = vld1q_u8(w.qs);
    const int8x16_t lo = as_s8(vandq_u8(q, vdupq_n_u8(kLow4)));
    const int8x16_t hi = as_s8(vshrq_n_u8(q, 4));
    return {vsubq_s8(lo, vdupq_n_s8(kOffset)), vsubq_s8(hi, vdupq_n_s8(kOffset))};
  }
};

struct Q80Block {
  using Block = BlockQ8_0;
  static int8x16x2_t values(const Block& w) { return {vld1q_s8(w.qs), vld1q_s8(w.qs + kLanes)}; }
};

inline int8x16x2_t act_values(const BlockQ8_0& a) { return {vld1q_s8(a.qs), vld1q_s8(a.qs + kLanes)}; }

// ---------------------------------------------------------------- K types

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

// Q4_K and Q5_K: sub-blocks 2j and 2j+1 are the low and high nibbles of
// qs[32j .. 32j+31]; Q5_K adds 16 where bit sb of qh[l] is set. Scales and
// mins 0..63 per sub-block of 32.
template <bool kFiveBit>
struct Q45K {
  using Block = std::conditional_t<kFiveBit, BlockQ5_K, BlockQ4_K>;
  static constexpr int kRunsPerScale = 2;
  static constexpr bool kHasMin = true;
  static constexpr int kSubBlocks = 8;
  int8x16_t q[kRuns];  // values 0..31
  uint8_t sc[kSubBlocks];
  int32x4x2_t mins;  // [8 x int32]
  float d, dmin;

  void decode(const Block& w) {
    constexpr int kSub = 32;
    constexpr uint8_t kBit4 = 0x10;
    uint8_t mn[kSubBlocks];
    unpack_scales_mins_4k(w.scales, sc, mn);
    mins = widen_u8x8(vld1_u8(mn));
    const uint8x16_t m4 = vdupq_n_u8(kLow4);
    [[maybe_unused]] uint8x16_t qh0, qh1;  // [16 x uint8] each: qh[0..15], qh[16..31]
    if constexpr (kFiveBit) {
      qh0 = vld1q_u8(w.qh);
      qh1 = vld1q_u8(w.qh + kLanes);
    }
#pragma GCC unroll 4
    for (int j = 0; j < kSubBlocks / 2; ++j) {
      const uint8x16_t raw0 = vld1q_u8(w.qs + kSub * j);
      const uint8x16_t raw1 = vld1q_u8(w.qs + kSub * j + kLanes);
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

  int32_t scale(int g) const { return sc[g]; }

  // sum_sb m[sb] (bsums[2sb] + bsums[2sb+1]), the pair sums in int32.
  int32_t summ(const BlockQ8_K& a) const {
    const int32x4_t pairs0 = vpaddlq_s16(vld1q_s16(a.bsums));      // sub-blocks 0..3
    const int32x4_t pairs1 = vpaddlq_s16(vld1q_s16(a.bsums + 8));  // 4..7
    return vaddvq_s32(vmlaq_s32(vmulq_s32(pairs0, mins.val[0]), pairs1, mins.val[1]));
  }
};

// Q6_K: values 128h + l, 128h + 32 + l, 128h + 64 + l, 128h + 96 + l
// (l < 32) take the low nibble of ql[64h + l], low of ql[64h + 32 + l], high
// of ql[64h + l], high of ql[64h + 32 + l], and bit pairs 0, 2, 4, 6 of
// qh[32h + l] as bits 4..5; the value is that minus 32. An int8 scale per 16.
struct Q6K {
  using Block = BlockQ6_K;
  static constexpr int kRunsPerScale = 1;
  static constexpr bool kHasMin = false;
  int8x16_t q[kRuns];  // values -32..31
  int8_t scales[kRuns];
  float d, dmin;  // dmin unused

  void decode(const Block& w) {
    constexpr int8_t kBias = 32;
    constexpr uint8_t kBits45 = 0x30;
    const uint8x16_t m4 = vdupq_n_u8(kLow4);
    const uint8x16_t m45 = vdupq_n_u8(kBits45);
    const int8x16_t bias = vdupq_n_s8(kBias);
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
    dmin = 0.0f;
  }

  int32_t scale(int g) const { return scales[g]; }
  int32_t summ(const BlockQ8_K&) const { return 0; }
};

// Q2_K and Q3_K: value 128h + 32j + i (i < 32) has bits 2j..2j+1 of
// qs[32h + i]; values 128h + 32j + 0..15 are sub-block (run) 8h + 2j,
// 16..31 run 8h + 2j + 1. Q3_K: bit 4h + j of hmask[i] is bit 2, and the
// value is that minus 4; 6-bit scales minus 32. Q2_K: 4-bit scale (low
// nibble) and min (high nibble) per sub-block.
template <bool kThreeBit>
struct Q23K {
  using Block = std::conditional_t<kThreeBit, BlockQ3_K, BlockQ2_K>;
  static constexpr int kRunsPerScale = 1;
  static constexpr bool kHasMin = !kThreeBit;
  int8x16_t q[kRuns];  // Q2_K 0..3, Q3_K -4..3
  int8_t scales[kRuns];
  int16x8x2_t mins;  // [16 x int16] (Q2_K)
  float d, dmin;

  void decode(const Block& w) {
    constexpr int8_t kBias = 4;
    constexpr int kScaleBias = 32;
    constexpr uint8_t kLow2 = 0x03, kBit2 = 0x04;
    if constexpr (kThreeBit) {
      quant::ref::q3_k_unpack_scales(w.scales, scales);
      for (auto& s : scales) s = static_cast<int8_t>(s - kScaleBias);
      dmin = 0.0f;
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
          const int8x16_t bias = vdupq_n_s8(kBias);
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

  int32_t scale(int g) const { return scales[g]; }

  // sum_sb min[sb] * bsums[sb], products widened to int32 (Q2_K).
  int32_t summ(const BlockQ8_K& a) const {
    if constexpr (kThreeBit) {
      return 0;
    } else {
      const int16x8_t bs0 = vld1q_s16(a.bsums), bs1 = vld1q_s16(a.bsums + 8);
      int32x4_t m = vmull_s16(vget_low_s16(mins.val[0]), vget_low_s16(bs0));
      m = vmlal_s16(m, vget_high_s16(mins.val[0]), vget_high_s16(bs0));
      m = vmlal_s16(m, vget_low_s16(mins.val[1]), vget_low_s16(bs1));
      m = vmlal_s16(m, vget_high_s16(mins.val[1]), vget_high_s16(bs1));
      return vaddvq_s32(m);
    }
  }
};

// IQ4_XS: element j < 16 of sub-block ib is kIq4nlValues[low nibble of
// qs[16 ib + j]] (run 2 ib), element j + 16 the high nibble's (run 2 ib + 1),
// looked up with TBL; a 6-bit scale minus 32 per sub-block of 32.
struct IQ4XS {
  using Block = BlockIQ4_XS;
  static constexpr int kRunsPerScale = 2;
  static constexpr bool kHasMin = false;
  static constexpr int kSubBlocks = 8;
  int8x16_t q[kRuns];  // values -127..113
  int8_t sc[kSubBlocks];
  float d, dmin;  // dmin unused

  void decode(const Block& w) {
    constexpr int kScaleBias = 32;
    const int8x16_t table = vld1q_s8(quant::kIq4nlValues.data());
    const uint8x16_t m4 = vdupq_n_u8(kLow4);
#pragma GCC unroll 8
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      const uint8x16_t raw = vld1q_u8(w.qs + kLanes * ib);
      q[2 * ib] = vqtbl1q_s8(table, vandq_u8(raw, m4));
      q[2 * ib + 1] = vqtbl1q_s8(table, vshrq_n_u8(raw, 4));
      sc[ib] = static_cast<int8_t>(quant::ref::iq4_xs_scale(w.scales_l, w.scales_h, ib) - kScaleBias);
    }
    d = widen_f16(w.d);
    dmin = 0.0f;
  }

  int32_t scale(int g) const { return sc[g]; }
  int32_t summ(const BlockQ8_K&) const { return 0; }
};

// The integer part of one block against one activation block, by SDOT.
template <typename Kernel>
inline int32_t block_sumi(const Kernel& k, const BlockQ8_K& a) {
  constexpr int kGroups = kRuns / Kernel::kRunsPerScale;
  int32x4_t acc = vdupq_n_s32(0);
#pragma GCC unroll 16
  for (int g = 0; g < kGroups; ++g) {
    int32x4_t p = vdupq_n_s32(0);
    for (int j = 0; j < Kernel::kRunsPerScale; ++j) {
      const int r = g * Kernel::kRunsPerScale + j;
      p = vdotq_s32(p, k.q[r], vld1q_s8(a.qs + kLanes * r));
    }
    acc = vmlaq_n_s32(acc, p, k.scale(g));
  }
  return vaddvq_s32(acc);
}

// The block's float contribution to the dot, as the reference computes it.
template <typename Kernel>
inline float block_term(const Kernel& k, const BlockQ8_K& a) {
  const int32_t sumi = block_sumi(k, a);
  if constexpr (Kernel::kHasMin) {
    return k.d * a.d * static_cast<float>(sumi) - k.dmin * a.d * static_cast<float>(k.summ(a));
  } else {
    return k.d * a.d * static_cast<float>(sumi);
  }
}

// ---------------------------------------------------------------- tiles

constexpr int kMaxTile = 4;  // rows and tokens of a QuantDot tile (quant_dot.h)

// One QuantDot::tile from the kernels Tile<NR, NT>::run(w, wrb, act, arb, k,
// y, ys) of every shape (1..4 rows x 1..4 tokens).
template <template <int, int> typename Tile>
void tile_by_shape(const uint8_t* w, size_t wrb, int64_t nr, const uint8_t* a, size_t arb, int64_t nt, int64_t k,
                   float* y, int64_t ys) {
  using Fn = void (*)(const uint8_t*, size_t, const uint8_t*, size_t, int64_t, float*, int64_t);
  static const Fn table[kMaxTile][kMaxTile] = {
      {Tile<1, 1>::run, Tile<1, 2>::run, Tile<1, 3>::run, Tile<1, 4>::run},
      {Tile<2, 1>::run, Tile<2, 2>::run, Tile<2, 3>::run, Tile<2, 4>::run},
      {Tile<3, 1>::run, Tile<3, 2>::run, Tile<3, 3>::run, Tile<3, 4>::run},
      {Tile<4, 1>::run, Tile<4, 2>::run, Tile<4, 3>::run, Tile<4, 4>::run},
  };
  table[nr - 1][nt - 1](w, wrb, a, arb, k, y, ys);
}

}  // namespace
}  // namespace ferrite::cpu::neon
