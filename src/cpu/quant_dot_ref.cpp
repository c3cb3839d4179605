// Plain reference of the quantized dot products: integer sums per block,
// then one float multiply-add per block. The SIMD versions are tested
// against these.
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "cpu/quant_dot.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;
using quant::kQK;

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

const QuantDot kQ4_0{ActQuant::Q8_0, q8_0_row_bytes, quantize_q8_0, dot_q4_0_q8_0};
const QuantDot kQ8_0{ActQuant::Q8_0, q8_0_row_bytes, quantize_q8_0, dot_q8_0_q8_0};

}  // namespace

const QuantDot* quant_dot_ref(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return &kQ4_0;
    case TensorType::Q8_0:
      return &kQ8_0;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
