// NEON (aarch64, dot product extension) dot products of Q4_0 and Q8_0 weight
// rows with Q8_0 activations. A block's 32 integer products are summed by
// SDOT (vdotq_s32: four int8 products into each int32 lane, exact), the
// lanes added (exact). The block sums are combined in float one block after
// another as quant_dot_ref.cpp does: sum += d_w * d_a * s, each product
// rounded before the sum (the aarch64 build uses -ffp-contract=off, and the
// products are separate vector multiplies), the f16 scales widened exactly
// by FCVTL. So the results equal the reference's bit for bit. The K types
// are in quant_dot_k_neon.cpp.
#include <arm_neon.h>

#include "cpu/quant_dot.h"
#include "cpu/quant_dot_k.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;
using quant::kQK;

constexpr int8_t kQ4Offset = 8;
constexpr uint8_t kNibbleMask = 0x0F;
constexpr int kNibbleShift = 4;
constexpr int kHalf = kQK / 2;  // 16 bytes: one NEON register of int8

constexpr int kBlocksPerStep = 4;

// The signed weights of block b as two registers: elements 0..15 and 16..31.
struct Q4_0Weights {
  const BlockQ4_0* w;
  int8x16x2_t operator()(int64_t b) const {
    // Elements 0..15 are the low nibbles, 16..31 the high ones.
    const uint8x16_t q = vld1q_u8(w[b].qs);
    const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(kNibbleMask)));
    const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(q, kNibbleShift));
    return {vsubq_s8(lo, vdupq_n_s8(kQ4Offset)), vsubq_s8(hi, vdupq_n_s8(kQ4Offset))};
  }
  uint16_t d(int64_t b) const { return w[b].d; }
};
struct Q8_0Weights {
  const BlockQ8_0* w;
  int8x16x2_t operator()(int64_t b) const { return {vld1q_s8(w[b].qs), vld1q_s8(w[b].qs + kHalf)}; }
  uint16_t d(int64_t b) const { return w[b].d; }
};

// Four int32 partial sums of block b's 32 products (exact).
template <typename Weights>
inline int32x4_t partial_dot(const Weights& w, const BlockQ8_0* a, int64_t b) {
  const int8x16x2_t wv = w(b);
  const int32x4_t s = vdotq_s32(vdupq_n_s32(0), wv.val[0], vld1q_s8(a[b].qs));
  return vdotq_s32(s, wv.val[1], vld1q_s8(a[b].qs + kHalf));
}

// f16 bit patterns [4] -> f32 [4] (exact).
inline float32x4_t widen_f16(uint16_t x0, uint16_t x1, uint16_t x2, uint16_t x3) {
  const uint16_t bits[kBlocksPerStep] = {x0, x1, x2, x3};
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(bits)));
}

// sum over blocks of d_w d_a s_b: four blocks a step, their products
// (d_w * d_a) * s_b computed as vectors (each rounded as the reference rounds
// it), then added to sum one by one, in block order.
template <typename Weights>
float dot_blocks(const Weights& w, const BlockQ8_0* a, int64_t nb) {
  float sum = 0.0f;
  int64_t b = 0;
  for (; b + kBlocksPerStep <= nb; b += kBlocksPerStep) {
    const int32_t s[kBlocksPerStep] = {vaddvq_s32(partial_dot(w, a, b)), vaddvq_s32(partial_dot(w, a, b + 1)),
                                       vaddvq_s32(partial_dot(w, a, b + 2)), vaddvq_s32(partial_dot(w, a, b + 3))};
    const float32x4_t dw = widen_f16(w.d(b), w.d(b + 1), w.d(b + 2), w.d(b + 3));
    const float32x4_t da = widen_f16(a[b].d, a[b + 1].d, a[b + 2].d, a[b + 3].d);
    const float32x4_t p = vmulq_f32(vmulq_f32(dw, da), vcvtq_f32_s32(vld1q_s32(s)));
    sum += vgetq_lane_f32(p, 0);
    sum += vgetq_lane_f32(p, 1);
    sum += vgetq_lane_f32(p, 2);
    sum += vgetq_lane_f32(p, 3);
  }
  for (; b < nb; ++b) {
    const int32_t s = vaddvq_s32(partial_dot(w, a, b));
    const float32x4_t dw = widen_f16(w.d(b), 0, 0, 0);
    const float32x4_t da = widen_f16(a[b].d, 0, 0, 0);
    const float32x4_t p = vmulq_f32(vmulq_f32(dw, da), vdupq_n_f32(static_cast<float>(s)));
    sum += vgetq_lane_f32(p, 0);
  }
  return sum;
}

float dot_q4_0_q8_0(const void* w_row, const void* act_row, int64_t k) {
  return dot_blocks(Q4_0Weights{static_cast<const BlockQ4_0*>(w_row)}, static_cast<const BlockQ8_0*>(act_row),
                    k / kQK);
}

float dot_q8_0_q8_0(const void* w_row, const void* act_row, int64_t k) {
  return dot_blocks(Q8_0Weights{static_cast<const BlockQ8_0*>(w_row)}, static_cast<const BlockQ8_0*>(act_row),
                    k / kQK);
}

// The reference's activation format and quantizer, with these dots.
QuantDot with_dot(TensorType type, float (*dot)(const void*, const void*, int64_t)) {
  QuantDot q = *quant_dot_ref(type);
  q.dot = dot;
  q.tile = nullptr;
  return q;
}

}  // namespace

const QuantDot* quant_dot_neon(TensorType type) {
  static const QuantDot q4_0 = with_dot(TensorType::Q4_0, dot_q4_0_q8_0);
  static const QuantDot q8_0 = with_dot(TensorType::Q8_0, dot_q8_0_q8_0);
  switch (type) {
    case TensorType::Q4_0:
      return &q4_0;
    case TensorType::Q8_0:
      return &q8_0;
    default:
      return quant_dot_k_neon(type);  // the K types, or nullptr
  }
}

}  // namespace ferrite::cpu
