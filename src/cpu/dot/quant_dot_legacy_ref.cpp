// Plain reference of the legacy 32-value products that had no integer dot:
// Q5_0, IQ4_NL and MXFP4 with Q8_0 activations, Q4_1 and Q5_1 with Q8_1
// activations. Per block, as llama.cpp's scalar products compute it:
//   sum += (d_w * d_a) * s_b             (Q5_0, IQ4_NL, MXFP4: d_w = mxfp4_scale(e),
//                                         the values 2 x E2M1, quant/mxfp4.h)
//   sum += (d_w * d_a) * s_b + m_w * s_a (Q4_1, Q5_1: s_a = f16(d * sum q))
// with s_b the exact integer sum of weight value times activation.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/fp16.h"
#include "cpu/dot/quant_dot_iq.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "quant/mxfp4.h"

namespace ferrite::cpu {
namespace {

using quant::BlockIQ4_NL;
using quant::BlockMXFP4;
using quant::BlockQ4_1;
using quant::BlockQ5_0;
using quant::BlockQ5_1;
using quant::BlockQ8_0;
using quant::BlockQ8_1;
using quant::kQK;

constexpr float kQ8Max = 127.0f;
constexpr int kHalf = kQK / 2;
constexpr int kQ5Offset = 16;

size_t q8_1_row_bytes(int64_t k) { return static_cast<size_t>(k / kQK) * sizeof(BlockQ8_1); }

// Weight value j (0..31) of a block: element j < 16 in the low nibble of
// qs[j], j >= 16 in the high nibble of qs[j - 16]; Q5: bit j of qh as bit 4.
inline int nibble(const uint8_t* qs, int j) { return j < kHalf ? qs[j] & 0xF : qs[j - kHalf] >> 4; }
inline int fifth_bit(const uint8_t* qh, int j) {
  uint32_t h;
  std::memcpy(&h, qh, sizeof h);
  return static_cast<int>((h >> j) & 1u) << 4;
}

int value(const BlockQ4_1& w, int j) { return nibble(w.qs, j); }
int value(const BlockQ5_0& w, int j) { return (nibble(w.qs, j) | fifth_bit(w.qh, j)) - kQ5Offset; }
int value(const BlockQ5_1& w, int j) { return nibble(w.qs, j) | fifth_bit(w.qh, j); }
int value(const BlockIQ4_NL& w, int j) { return quant::kIq4nlValues[nibble(w.qs, j)]; }
int value(const BlockMXFP4& w, int j) { return quant::kMxfp4Values[nibble(w.qs, j)]; }

// The block's float scale d_w.
template <typename Block>
float scale(const Block& w) {
  return fp16_to_fp32(w.d);
}
template <>
float scale(const BlockMXFP4& w) {
  return quant::mxfp4_scale(w.e);
}

template <typename Block, typename Act>
int32_t block_sum(const Block& w, const Act& a) {
  int32_t s = 0;
  for (int j = 0; j < kQK; ++j) s += value(w, j) * a.qs[j];
  return s;
}

// Q5_0, IQ4_NL, MXFP4.
template <typename Block>
float dot_q8_0(const void* w_row, const void* act_row, int64_t k) {
  const auto* w = static_cast<const Block*>(w_row);
  const auto* a = static_cast<const BlockQ8_0*>(act_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQK; ++b) {
    sum += scale(w[b]) * fp16_to_fp32(a[b].d) * static_cast<float>(block_sum(w[b], a[b]));
  }
  return sum;
}

// Q4_1, Q5_1.
template <typename Block>
float dot_q8_1(const void* w_row, const void* act_row, int64_t k) {
  const auto* w = static_cast<const Block*>(w_row);
  const auto* a = static_cast<const BlockQ8_1*>(act_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQK; ++b) {
    sum += fp16_to_fp32(w[b].d) * fp16_to_fp32(a[b].d) * static_cast<float>(block_sum(w[b], a[b])) +
           fp16_to_fp32(w[b].m) * fp16_to_fp32(a[b].s);
  }
  return sum;
}

QuantDot q8_0_dot(float (*fn)(const void*, const void*, int64_t)) {
  QuantDot q = *quant_dot_ref(TensorType::Q4_0);
  q.dot = fn;
  q.tile = nullptr;
  return q;
}

QuantDot q8_1_dot(float (*fn)(const void*, const void*, int64_t)) {
  return {ActQuant::Q8_1, q8_1_row_bytes, quantize_q8_1_ref, fn, nullptr};
}

}  // namespace

void quantize_q8_1_ref(const float* x, void* dst, int64_t k) {
  auto* out = static_cast<BlockQ8_1*>(dst);
  for (int64_t b = 0; b < k / kQK; ++b) {
    const float* xb = x + b * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float d = amax / kQ8Max;
    const float id = amax != 0.0f ? kQ8Max / amax : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < kQK; ++j) {
      out[b].qs[j] = static_cast<int8_t>(std::nearbyint(xb[j] * id));
      sum += out[b].qs[j];
    }
    out[b].d = fp32_to_fp16(d);
    out[b].s = fp32_to_fp16(d * static_cast<float>(sum));
  }
}

const QuantDot* quant_dot_legacy_ref(TensorType type) {
  static const QuantDot q4_1 = q8_1_dot(dot_q8_1<BlockQ4_1>), q5_1 = q8_1_dot(dot_q8_1<BlockQ5_1>),
                        q5_0 = q8_0_dot(dot_q8_0<BlockQ5_0>), iq4_nl = q8_0_dot(dot_q8_0<BlockIQ4_NL>),
                        mxfp4 = q8_0_dot(dot_q8_0<BlockMXFP4>);
  switch (type) {
    case TensorType::Q4_1:
      return &q4_1;
    case TensorType::Q5_1:
      return &q5_1;
    case TensorType::Q5_0:
      return &q5_0;
    case TensorType::IQ4_NL:
      return &iq4_nl;
    case TensorType::MXFP4:
      return &mxfp4;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
