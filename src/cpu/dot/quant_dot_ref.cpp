// Plain reference of the quantized dot products: integer sums per block,
// then one float multiply-add per block. The SIMD versions are tested
// against these.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/fp16.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/dot/quant_dot_iq.h"
#include "quant/blocks.h"
#include "quant/dequant_ref.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_0;
using quant::BlockQ8_K;
using quant::kQK;
using quant::kQKK;

constexpr int kSub4K = 32;  // Q4_K sub-block
constexpr int kSub6K = 16;  // Q6_K sub-block (and Q8_K bsums group)
constexpr int kQ6Offset = 32;
constexpr int kQ5High = 16;  // the fifth bit of a Q5_K value

constexpr float kQ8Max = 127.0f;

size_t q8_0_row_bytes(int64_t k) { return static_cast<size_t>(k / kQK) * sizeof(BlockQ8_0); }

// Same values as act_quant_round_trip(Q8_0): d = amax/127, q = round_even(x * 127/amax).
void quantize_q8_0(const float* x, void* dst, int64_t k) {
  auto* out = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < k / kQK; ++b) {
    const float* xb = x + b * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float d = amax / kQ8Max;
    const float id = amax != 0.0f ? kQ8Max / amax : 0.0f;
    out[b].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) out[b].qs[j] = static_cast<int8_t>(std::nearbyint(xb[j] * id));
  }
}

float dot_q4_0_q8_0(const void* w_row, const void* act_row, int64_t k) {
  const auto* w = static_cast<const BlockQ4_0*>(w_row);
  const auto* a = static_cast<const BlockQ8_0*>(act_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQK; ++b) {
    int32_t s = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      s += ((w[b].qs[j] & 0x0F) - 8) * a[b].qs[j];
      s += ((w[b].qs[j] >> 4) - 8) * a[b].qs[j + kQK / 2];
    }
    sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d) * static_cast<float>(s);
  }
  return sum;
}

float dot_q8_0_q8_0(const void* w_row, const void* act_row, int64_t k) {
  const auto* w = static_cast<const BlockQ8_0*>(w_row);
  const auto* a = static_cast<const BlockQ8_0*>(act_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQK; ++b) {
    int32_t s = 0;
    for (int j = 0; j < kQK; ++j) s += w[b].qs[j] * a[b].qs[j];
    sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d) * static_cast<float>(s);
  }
  return sum;
}

size_t q8_k_row_bytes(int64_t k) { return static_cast<size_t>(k / kQKK) * sizeof(BlockQ8_K); }

// Same values as act_quant_round_trip(Q8_K), plus the sums of each 16.
void quantize_q8_k(const float* x, void* dst, int64_t k) {
  auto* out = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < k / kQKK; ++b) {
    const float* xb = x + b * kQKK;
    float amax = 0.0f, vmax = 0.0f;
    for (int j = 0; j < kQKK; ++j) {
      if (std::fabs(xb[j]) > amax) {
        amax = std::fabs(xb[j]);
        vmax = xb[j];
      }
    }
    BlockQ8_K& o = out[b];
    if (amax == 0.0f) {
      std::memset(&o, 0, sizeof o);
      continue;
    }
    const float iscale = -kQ8Max / vmax;
    for (int j = 0; j < kQKK; ++j) {
      // The lower clamp never acts on finite input (|iscale * x| <= 127
      // up to rounding); it keeps the cast defined when iscale overflows.
      o.qs[j] = static_cast<int8_t>(std::fmax(-kQ8Max, std::fmin(kQ8Max, std::nearbyint(iscale * xb[j]))));
    }
    for (int g = 0; g < kQKK / kSub6K; ++g) {
      int sum = 0;
      for (int j = 0; j < kSub6K; ++j) sum += o.qs[g * kSub6K + j];
      o.bsums[g] = static_cast<int16_t>(sum);
    }
    o.d = 1.0f / iscale;
  }
}

// Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins; the value
// of element l of sub-block sb is nibble (low for even sb, high for odd) of
// qs[(sb / 2) * 32 + l], plus 16 when bit sb of qh[l] is set (Q5_K).
template <typename Block>
float dot_q45_k_q8_k(const void* w_row, const void* act_row, int64_t k) {
  const auto* w = static_cast<const Block*>(w_row);
  const auto* a = static_cast<const BlockQ8_K*>(act_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQKK; ++b) {
    int32_t sumi = 0, summ = 0;
    for (int sb = 0; sb < kQKK / kSub4K; ++sb) {
      uint8_t sc, m;
      quant::ref::k_scale_min(sb, w[b].scales, &sc, &m);
      const uint8_t* q = w[b].qs + (sb / 2) * kSub4K;
      int32_t dot = 0;
      for (int l = 0; l < kSub4K; ++l) {
        int v = sb % 2 == 0 ? (q[l] & 0x0F) : (q[l] >> 4);
        if constexpr (std::is_same_v<Block, BlockQ5_K>) v += (w[b].qh[l] >> sb) & 1 ? kQ5High : 0;
        dot += v * a[b].qs[sb * kSub4K + l];
      }
      sumi += sc * dot;
      summ += m * (a[b].bsums[2 * sb] + a[b].bsums[2 * sb + 1]);
    }
    sum += fp16_to_fp32(w[b].d) * a[b].d * static_cast<float>(sumi) -
           fp16_to_fp32(w[b].dmin) * a[b].d * static_cast<float>(summ);
  }
  return sum;
}

float dot_q4_k_q8_k(const void* w_row, const void* act_row, int64_t k) {
  return dot_q45_k_q8_k<BlockQ4_K>(w_row, act_row, k);
}
float dot_q5_k_q8_k(const void* w_row, const void* act_row, int64_t k) {
  return dot_q45_k_q8_k<BlockQ5_K>(w_row, act_row, k);
}

// Q2_K and Q3_K: sixteen sub-blocks of 16; value 128h + 32j + i has bits
// 2j..2j+1 of qs[32h + i]. Q2_K: 4-bit scale (low nibble) and min (high
// nibble) per sub-block. Q3_K: 6-bit scales (minus 32), and the value minus
// 4 unless bit 4h + j of hmask[i] is set.
float dot_q2_k_q8_k(const void* w_row, const void* act_row, int64_t k) {
  const auto* w = static_cast<const BlockQ2_K*>(w_row);
  const auto* a = static_cast<const BlockQ8_K*>(act_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQKK; ++b) {
    int32_t sumi = 0, summ = 0;
    for (int sb = 0; sb < kQKK / kSub6K; ++sb) {
      const int h = sb / 8, j = (sb % 8) / 2, part = sb % 2;
      int32_t dot = 0;
      for (int l = 0; l < kSub6K; ++l) {
        const int v = (w[b].qs[32 * h + kSub6K * part + l] >> (2 * j)) & 3;
        dot += v * a[b].qs[sb * kSub6K + l];
      }
      sumi += (w[b].scales[sb] & 0x0F) * dot;
      summ += (w[b].scales[sb] >> 4) * a[b].bsums[sb];
    }
    sum += fp16_to_fp32(w[b].d) * a[b].d * static_cast<float>(sumi) -
           fp16_to_fp32(w[b].dmin) * a[b].d * static_cast<float>(summ);
  }
  return sum;
}

float dot_q3_k_q8_k(const void* w_row, const void* act_row, int64_t k) {
  constexpr int kScaleBias = 32, kLowBias = 4;
  const auto* w = static_cast<const BlockQ3_K*>(w_row);
  const auto* a = static_cast<const BlockQ8_K*>(act_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQKK; ++b) {
    int8_t scales[kQKK / kSub6K];
    quant::ref::q3_k_unpack_scales(w[b].scales, scales);
    int32_t sumi = 0;
    for (int sb = 0; sb < kQKK / kSub6K; ++sb) {
      const int h = sb / 8, j = (sb % 8) / 2, part = sb % 2;
      int32_t dot = 0;
      for (int l = 0; l < kSub6K; ++l) {
        const int i = kSub6K * part + l;
        const int high = (w[b].hmask[i] >> (4 * h + j)) & 1;
        const int v = ((w[b].qs[32 * h + i] >> (2 * j)) & 3) - (high != 0 ? 0 : kLowBias);
        dot += v * a[b].qs[sb * kSub6K + l];
      }
      sumi += (scales[sb] - kScaleBias) * dot;
    }
    sum += fp16_to_fp32(w[b].d) * a[b].d * static_cast<float>(sumi);
  }
  return sum;
}

float dot_q6_k_q8_k(const void* w_row, const void* act_row, int64_t k) {
  const auto* w = static_cast<const BlockQ6_K*>(w_row);
  const auto* a = static_cast<const BlockQ8_K*>(act_row);
  float sum = 0.0f;
  int8_t q[kQKK];
  for (int64_t b = 0; b < k / kQKK; ++b) {
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = w[b].ql + 64 * half;
      const uint8_t* qh = w[b].qh + 32 * half;
      int8_t* y = q + 128 * half;
      for (int l = 0; l < 32; ++l) {
        y[l] = static_cast<int8_t>(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - kQ6Offset);
        y[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - kQ6Offset);
        y[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - kQ6Offset);
        y[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - kQ6Offset);
      }
    }
    int32_t sumi = 0;
    for (int sb = 0; sb < kQKK / kSub6K; ++sb) {
      int32_t dot = 0;
      for (int l = 0; l < kSub6K; ++l) dot += q[sb * kSub6K + l] * a[b].qs[sb * kSub6K + l];
      sumi += w[b].scales[sb] * dot;
    }
    sum += fp16_to_fp32(w[b].d) * a[b].d * static_cast<float>(sumi);
  }
  return sum;
}

const QuantDot kQ4_K{ActQuant::Q8_K, q8_k_row_bytes, quantize_q8_k, dot_q4_k_q8_k, nullptr};
const QuantDot kQ2_K{ActQuant::Q8_K, q8_k_row_bytes, quantize_q8_k, dot_q2_k_q8_k, nullptr};
const QuantDot kQ3_K{ActQuant::Q8_K, q8_k_row_bytes, quantize_q8_k, dot_q3_k_q8_k, nullptr};
const QuantDot kQ5_K{ActQuant::Q8_K, q8_k_row_bytes, quantize_q8_k, dot_q5_k_q8_k, nullptr};
const QuantDot kQ6_K{ActQuant::Q8_K, q8_k_row_bytes, quantize_q8_k, dot_q6_k_q8_k, nullptr};

const QuantDot kQ4_0{ActQuant::Q8_0, q8_0_row_bytes, quantize_q8_0, dot_q4_0_q8_0, nullptr};
const QuantDot kQ8_0{ActQuant::Q8_0, q8_0_row_bytes, quantize_q8_0, dot_q8_0_q8_0, nullptr};

}  // namespace

const QuantDot* quant_dot_ref(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return &kQ4_0;
    case TensorType::Q8_0:
      return &kQ8_0;
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
      return quant_dot_iq_ref(type);  // the IQ, TQ and other legacy types (quant_dot_iq.h), else nullptr
  }
}

}  // namespace ferrite::cpu
