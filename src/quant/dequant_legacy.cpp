// Reference dequantizers of the float types and the 32-element legacy quants.
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dequant_ref.h"

namespace ferrite::quant::ref {

void dequant_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequant_f16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
}

void dequant_bf16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
}

void dequant_q4_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>((b[i].qs[j] & 0xF) - 8) * d;
      dst[j + kQK / 2] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequant_q4_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_fp32(b[i].d);
    const float m = fp16_to_fp32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(b[i].qs[j] & 0xF) * d + m;
      dst[j + kQK / 2] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

namespace {
// The 5-bit value of element j (0..31) of a Q5 block.
inline int q5_value(const uint8_t* qs, uint32_t qh, int j) {
  const int lo = j < kQK / 2 ? (qs[j] & 0xF) : (qs[j - kQK / 2] >> 4);
  return lo | static_cast<int>(((qh >> j) & 1u) << 4);
}
}  // namespace

void dequant_q5_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_fp32(b[i].d);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, sizeof(qh));
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(q5_value(b[i].qs, qh, j) - 16) * d;
  }
}

void dequant_q5_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_fp32(b[i].d);
    const float m = fp16_to_fp32(b[i].m);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, sizeof(qh));
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(q5_value(b[i].qs, qh, j)) * d + m;
  }
}

void dequant_q8_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void dequant_q8_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

}  // namespace ferrite::quant::ref
