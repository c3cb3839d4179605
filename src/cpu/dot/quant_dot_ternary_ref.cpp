// Plain reference of the ternary products (TQ1_0, TQ2_0) with Q8_K
// activations: per 256-value block the exact integer sum of (trit - 1) times
// activation, then sum += d_w * d_a * sumi in block order (llama.cpp's
// scalar products).
//
// TQ2_0: value 128h + 32l + m (h < 2, l < 4, m < 32) is bits 2l..2l+1 of
// qs[32h + m]. TQ1_0: five trits per byte of qs, four per byte of qh, as a
// base-3 fixed-point fraction: trit n of byte q is the top of 3 (q 3^n mod
// 256) / 256. Bytes qs[0..31] hold values 32n + m, qs[32..47] values
// 160 + 16n + m, qh[0..3] values 240 + 4n + j.
#include <cstdint>

#include "core/fp16.h"
#include "cpu/dot/quant_dot_iq.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_K;
using quant::BlockTQ1_0;
using quant::BlockTQ2_0;
using quant::kQKK;

inline int trit(uint8_t byte, int n) {
  constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto q = static_cast<uint8_t>(byte * kPow3[n]);
  return (q * 3) >> 8;
}

int32_t sum_tq1_0(const BlockTQ1_0& w, const int8_t* a) {
  constexpr int kWide = 32, kNarrow = 16, kHigh = 4;  // bytes per run of qs, the rest of qs, qh
  constexpr int kTrits = 5, kHighTrits = 4;
  int32_t s = 0;
  for (int n = 0; n < kTrits; ++n) {
    for (int m = 0; m < kWide; ++m) s += (trit(w.qs[m], n) - 1) * a[kWide * n + m];
  }
  a += kTrits * kWide;
  for (int n = 0; n < kTrits; ++n) {
    for (int m = 0; m < kNarrow; ++m) s += (trit(w.qs[kWide + m], n) - 1) * a[kNarrow * n + m];
  }
  a += kTrits * kNarrow;
  for (int n = 0; n < kHighTrits; ++n) {
    for (int j = 0; j < kHigh; ++j) s += (trit(w.qh[j], n) - 1) * a[kHigh * n + j];
  }
  return s;
}

int32_t sum_tq2_0(const BlockTQ2_0& w, const int8_t* a) {
  int32_t s = 0;
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 4; ++l) {
      for (int m = 0; m < 32; ++m) s += (((w.qs[32 * h + m] >> (2 * l)) & 3) - 1) * a[128 * h + 32 * l + m];
    }
  }
  return s;
}

template <typename Block, int32_t (*kSum)(const Block&, const int8_t*)>
float dot(const void* w_row, const void* act_row, int64_t k) {
  const auto* w = static_cast<const Block*>(w_row);
  const auto* a = static_cast<const BlockQ8_K*>(act_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQKK; ++b) {
    sum += fp16_to_fp32(w[b].d) * a[b].d * static_cast<float>(kSum(w[b], a[b].qs));
  }
  return sum;
}

QuantDot q8_k_dot(float (*fn)(const void*, const void*, int64_t)) {
  QuantDot q = *quant_dot_ref(TensorType::Q4_K);
  q.dot = fn;
  q.tile = nullptr;
  return q;
}

}  // namespace

const QuantDot* quant_dot_ternary_ref(TensorType type) {
  static const QuantDot tq1_0 = q8_k_dot(dot<BlockTQ1_0, sum_tq1_0>), tq2_0 = q8_k_dot(dot<BlockTQ2_0, sum_tq2_0>);
  switch (type) {
    case TensorType::TQ1_0:
      return &tq1_0;
    case TensorType::TQ2_0:
      return &tq2_0;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
