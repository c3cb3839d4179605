// NEON activation quantizers, bit-identical to the references in
// quant_dot_ref.cpp.
//
// Q8_K:
//   - amax is the largest |x| by the reference's `|x| > amax` test (a
//     compare and select per lane, so NaN lanes, signalling ones included,
//     are skipped exactly as the reference skips them); the maximum of the
//     lanes is exact whatever the order;
//   - vmax is the first value whose magnitude is amax;
//   - each value is iscale * x (one rounded product), rounded half to even
//     (FRINTN, as nearbyint in the default mode), clamped by FMINNM/FMAXNM,
//     which are fmin/fmax (a NaN product becomes 127, as fmin(127, NaN));
//   - the 16-sums are exact integer sums; d = 1 / iscale in scalar float.
//
// Q8_0 (blocks of 32):
//   - amax is the fmax of the |x| (FMAXNM, which is fmax; the maximum of
//     numbers is exact in any order);
//   - d = amax / 127 stored as f16 by the reference's conversion, and
//     id = 127 / amax (0 for an all-zero block), both in scalar float;
//   - each value is x * id (one rounded product), rounded half to even
//     (FRINTN) and converted to int8 (exact: within +-127 for finite x).
#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "cpu/dot/act_quant.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_K;
using quant::kQK;
using quant::kQKK;

constexpr int kLanes = 4;                      // floats per NEON register
constexpr int kGroup = 16;                     // values per 16-sum
constexpr int kVecsPerBlock = kQKK / kLanes;   // 64
constexpr int kGroupsPerBlock = kQKK / kGroup;  // 16
constexpr float kQ8Max = 127.0f;

// max |x| over a block of 256 by `|x| > m` per lane, then across the lanes.
float block_amax(const float* xb) {
  float32x4_t m = vdupq_n_f32(0.0f);
  for (int i = 0; i < kVecsPerBlock; ++i) {
    const float32x4_t a = vabsq_f32(vld1q_f32(xb + kLanes * i));
    m = vbslq_f32(vcgtq_f32(a, m), a, m);  // NaN compares false: skipped
  }
  float amax = 0.0f;
  for (int l = 0; l < kLanes; ++l) {
    const float v = vgetq_lane_f32(m, 0);
    if (v > amax) amax = v;
    m = vextq_f32(m, m, 1);
  }
  return amax;
}

// The first value of the block whose magnitude is amax (amax > 0, so it exists).
float first_of_magnitude(const float* xb, float amax) {
  const float32x4_t va = vdupq_n_f32(amax);
  for (int i = 0; i < kVecsPerBlock; ++i) {
    const float* p = xb + kLanes * i;
    if (vmaxvq_u32(vceqq_f32(vabsq_f32(vld1q_f32(p)), va)) != 0) {
      for (int l = 0; l < kLanes; ++l) {
        if (std::fabs(p[l]) == amax) return p[l];
      }
    }
  }
  return amax;  // not reached: amax is the magnitude of some value
}

}  // namespace

void quantize_q8_k_neon(const float* x, void* dst, int64_t k) {
  auto* out = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < k / kQKK; ++b) {
    const float* xb = x + b * kQKK;
    BlockQ8_K& o = out[b];
    const float amax = block_amax(xb);
    if (amax == 0.0f) {
      std::memset(&o, 0, sizeof o);
      continue;
    }
    const float iscale = -kQ8Max / first_of_magnitude(xb, amax);
    const float32x4_t vis = vdupq_n_f32(iscale);
    const float32x4_t hi = vdupq_n_f32(kQ8Max);
    const float32x4_t lo = vdupq_n_f32(-kQ8Max);
    for (int g = 0; g < kGroupsPerBlock; ++g) {
      int32x4_t q[kGroup / kLanes];  // [4][4 x int32]: the group's 16 values
      for (int i = 0; i < kGroup / kLanes; ++i) {
        const float32x4_t r = vrndnq_f32(vmulq_f32(vis, vld1q_f32(xb + kGroup * g + kLanes * i)));
        // Integral and within +-127 after the clamp: the conversion is exact.
        q[i] = vcvtq_s32_f32(vmaxnmq_f32(vminnmq_f32(r, hi), lo));
      }
      const int16x8_t h0 = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
      const int16x8_t h1 = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
      vst1q_s8(o.qs + kGroup * g, vcombine_s8(vmovn_s16(h0), vmovn_s16(h1)));
      o.bsums[g] = static_cast<int16_t>(vaddvq_s32(vaddq_s32(vaddq_s32(q[0], q[1]), vaddq_s32(q[2], q[3]))));
    }
    o.d = 1.0f / iscale;
  }
}

void quantize_q8_0_neon(const float* x, void* dst, int64_t k) {
  constexpr int kVecs = kQK / kLanes;  // 8
  auto* out = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < k / kQK; ++b) {
    const float* xb = x + b * kQK;
    float32x4_t v[kVecs];
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int i = 0; i < kVecs; ++i) {
      v[i] = vld1q_f32(xb + kLanes * i);
      m = vmaxnmq_f32(m, vabsq_f32(v[i]));
    }
    const float amax = vmaxnmvq_f32(m);
    const float id = amax != 0.0f ? kQ8Max / amax : 0.0f;
    out[b].d = fp32_to_fp16(amax / kQ8Max);
    const float32x4_t vid = vdupq_n_f32(id);
    int32x4_t q[kVecs];
    for (int i = 0; i < kVecs; ++i) q[i] = vcvtq_s32_f32(vrndnq_f32(vmulq_f32(v[i], vid)));
    for (int h = 0; h < 2; ++h) {
      const int32x4_t* p = q + 4 * h;
      const int16x8_t lo = vcombine_s16(vmovn_s32(p[0]), vmovn_s32(p[1]));
      const int16x8_t hi = vcombine_s16(vmovn_s32(p[2]), vmovn_s32(p[3]));
      vst1q_s8(out[b].qs + 16 * h, vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)));
    }
  }
}

}  // namespace ferrite::cpu
