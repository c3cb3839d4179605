// NEON (aarch64, dot product extension) dot products of Q4_0 and Q8_0 weight
// rows with Q8_0 activations. A block's 32 integer products are summed by
// SDOT (vdotq_s32: four int8 products into each int32 lane, exact), the
// lanes added (exact). The block sums are combined in float one block after
// another as quant_dot_ref.cpp does: sum += d_w * d_a * s, each product
// rounded before the sum (the aarch64 build uses -ffp-contract=off, and the
// products are separate vector multiplies), the f16 scales widened exactly
// by FCVTL. So the results equal the reference's bit for bit. The K types
// and IQ4_XS are in quant_dot_k_neon.cpp, the SMMLA tiles in
// quant_dot_neon_i8mm.cpp.
#include <arm_neon.h>

#include "cpu/dot/act_quant.h"
#include "cpu/dot/quant_decode_neon.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/dot/quant_dot_k.h"

namespace ferrite::cpu {
namespace {

using neon::BlockQ8_0;
using quant::kQK;

using neon::kMaxTile;

constexpr int kBlocksPerStep = 4;

// Four int32 partial sums of one block's 32 products (exact).
inline int32x4_t partial_dot(int8x16x2_t w, const BlockQ8_0& a) {
  const int8x16x2_t av = neon::act_values(a);
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w.val[0], av.val[0]), w.val[1], av.val[1]);
}

// sum over blocks of d_w d_a s_b: four blocks a step, their products
// (d_w * d_a) * s_b computed as vectors (each rounded as the reference rounds
// it), then added to sum one by one, in block order.
template <typename Weights>
float dot_blocks(const typename Weights::Block* w, const BlockQ8_0* a, int64_t nb) {
  float sum = 0.0f;
  int64_t b = 0;
  for (; b + kBlocksPerStep <= nb; b += kBlocksPerStep) {
    int32_t s[kBlocksPerStep];
    uint16_t dw[kBlocksPerStep], da[kBlocksPerStep];
    for (int j = 0; j < kBlocksPerStep; ++j) {
      s[j] = vaddvq_s32(partial_dot(Weights::values(w[b + j]), a[b + j]));
      dw[j] = w[b + j].d;
      da[j] = a[b + j].d;
    }
    const float32x4_t p =
        vmulq_f32(vmulq_f32(neon::widen_f16x4(dw), neon::widen_f16x4(da)), vcvtq_f32_s32(vld1q_s32(s)));
    sum += vgetq_lane_f32(p, 0);
    sum += vgetq_lane_f32(p, 1);
    sum += vgetq_lane_f32(p, 2);
    sum += vgetq_lane_f32(p, 3);
  }
  for (; b < nb; ++b) {
    const int32_t s = vaddvq_s32(partial_dot(Weights::values(w[b]), a[b]));
    sum += neon::widen_f16(w[b].d) * neon::widen_f16(a[b].d) * static_cast<float>(s);
  }
  return sum;
}

template <typename Weights>
float dot(const void* w_row, const void* act_row, int64_t k) {
  return dot_blocks<Weights>(static_cast<const typename Weights::Block*>(w_row),
                             static_cast<const BlockQ8_0*>(act_row), k / kQK);
}

// NR rows x NT tokens: each weight block decoded once per row and used for
// every token; per token, the rows' block sums as one vector (unused lanes
// zero) scaled by (d_w * d_a) lane by lane and added to that token's sums in
// block order, so every output is its dot's value.
template <typename Weights, int NR, int NT>
void q_tile(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  using Block = typename Weights::Block;
  float32x4_t sum[NT];
  for (auto& s : sum) s = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < k / kQK; ++b) {
    int8x16x2_t wv[NR];
    uint16_t dw[kMaxTile] = {};
    for (int r = 0; r < NR; ++r) {
      const Block& blk = reinterpret_cast<const Block*>(w + r * wrb)[b];
      wv[r] = Weights::values(blk);
      dw[r] = blk.d;
    }
    const float32x4_t dw4 = neon::widen_f16x4(dw);
    for (int t = 0; t < NT; ++t) {
      const BlockQ8_0& a = reinterpret_cast<const BlockQ8_0*>(act + t * arb)[b];
      int32x4_t p[kMaxTile];
      for (int r = 0; r < kMaxTile; ++r) p[r] = r < NR ? partial_dot(wv[r], a) : vdupq_n_s32(0);
      const int32x4_t s = vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));  // [row sums]
      const float32x4_t da = vdupq_n_f32(neon::widen_f16(a.d));
      sum[t] = vaddq_f32(sum[t], vmulq_f32(vmulq_f32(dw4, da), vcvtq_f32_s32(s)));
    }
  }
  for (int t = 0; t < NT; ++t) {
    float out[kMaxTile];
    vst1q_f32(out, sum[t]);
    for (int r = 0; r < NR; ++r) y[t * ys + r] = out[r];
  }
}

template <typename Weights>
struct QTile {
  template <int NR, int NT>
  struct Shape {
    static void run(const uint8_t* w, size_t wrb, const uint8_t* a, size_t arb, int64_t k, float* y, int64_t ys) {
      q_tile<Weights, NR, NT>(w, wrb, a, arb, k, y, ys);
    }
  };
};

// The reference's activation format, with the NEON quantizer and these products.
template <typename Weights>
QuantDot with_kernel(TensorType type) {
  QuantDot q = *quant_dot_ref(type);
  q.quantize = quantize_q8_0_neon;
  q.dot = dot<Weights>;
  q.tile = neon::tile_by_shape<QTile<Weights>::template Shape>;
  return q;
}

}  // namespace

const QuantDot* quant_dot_neon(TensorType type) {
  static const QuantDot q4_0 = with_kernel<neon::Q40Block>(TensorType::Q4_0);
  static const QuantDot q8_0 = with_kernel<neon::Q80Block>(TensorType::Q8_0);
  switch (type) {
    case TensorType::Q4_0:
      return &q4_0;
    case TensorType::Q8_0:
      return &q8_0;
    default:
      return quant_dot_k_neon(type);  // the K types and IQ4_XS, or nullptr
  }
}

}  // namespace ferrite::cpu
