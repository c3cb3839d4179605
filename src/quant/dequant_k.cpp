// Reference dequantizers of the 256-element K-quants and the ternary types.
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dequant_ref.h"

namespace ferrite::quant::ref {

namespace {
constexpr int kHalfK = kQKK / 2;  // elements covered by one pass over 32 quant bytes × 4 shifts
}  // namespace

void q3_k_unpack_scales(const uint8_t* packed, int8_t* scales16) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales16[j] = static_cast<int8_t>(low | (high << 4));
  }
}

void dequant_q2_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const float dmin = fp16_to_fp32(b[i].dmin);
    int is = 0;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b[i].qs + 32 * half;
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {  // two sub-blocks of 16 per shift
          const uint8_t sc = b[i].scales[is++];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            *dst++ = dl * static_cast<float>((q[l + 16 * part] >> shift) & 3) - ml;
          }
        }
      }
    }
  }
}

void dequant_q3_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    int8_t scales[16];
    q3_k_unpack_scales(b[i].scales, scales);
    int is = 0;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b[i].qs + 32 * half;
      for (int j = 0; j < 4; ++j) {
        const int shift = 2 * j;
        const uint8_t hbit = static_cast<uint8_t>(1u << (4 * half + j));
        for (int part = 0; part < 2; ++part) {
          const float dl = d * static_cast<float>(scales[is++] - 32);
          for (int l = 0; l < 16; ++l) {
            const int idx = l + 16 * part;
            const int v = ((q[idx] >> shift) & 3) - ((b[i].hmask[idx] & hbit) ? 0 : 4);
            *dst++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

void dequant_q4_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const float dmin = fp16_to_fp32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int is = 0; is < 8; is += 2, q += 32) {
      uint8_t sc, m;
      k_scale_min(is, b[i].scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      k_scale_min(is + 1, b[i].scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) *dst++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *dst++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequant_q5_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const float dmin = fp16_to_fp32(b[i].dmin);
    const uint8_t* ql = b[i].qs;
    const uint8_t* qh = b[i].qh;
    for (int is = 0; is < 8; is += 2, ql += 32) {
      uint8_t sc, m;
      k_scale_min(is, b[i].scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      k_scale_min(is + 1, b[i].scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      const uint8_t u1 = static_cast<uint8_t>(1u << is), u2 = static_cast<uint8_t>(2u << is);
      for (int l = 0; l < 32; ++l) {
        *dst++ = d1 * static_cast<float>((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *dst++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
      }
    }
  }
}

void dequant_q6_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = b[i].ql + 64 * half;
      const uint8_t* qh = b[i].qh + 32 * half;
      const int8_t* sc = b[i].scales + 8 * half;
      float* y = dst + kHalfK * half;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
    dst += kQKK;
  }
}

void dequant_q8_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    for (int j = 0; j < kQKK; ++j) *dst++ = b[i].d * static_cast<float>(b[i].qs[j]);
  }
}

namespace {
// Trit `n` (0 = most significant) of a byte holding 5 (or 4) trits as a
// fixed-point fraction: multiply by 3^n (mod 256), then the top of q * 3.
inline int tq1_trit(uint8_t byte, int n) {
  constexpr uint8_t kPow3[6] = {1, 3, 9, 27, 81, 243};
  const auto q = static_cast<uint8_t>(byte * kPow3[n]);
  return (static_cast<uint16_t>(q) * 3) >> 8;
}
}  // namespace

void dequant_tq1_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockTQ1_0*>(src);
  constexpr int kQs = sizeof(BlockTQ1_0::qs);  // 48: 32 bytes then 16 bytes
  constexpr int kWide = kQs - kQs % 32;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    for (int t = 0; t < 5; ++t) {
      for (int m = 0; m < kWide; ++m) *dst++ = static_cast<float>(tq1_trit(b[i].qs[m], t) - 1) * d;
    }
    for (int t = 0; t < 5; ++t) {
      for (int m = kWide; m < kQs; ++m) *dst++ = static_cast<float>(tq1_trit(b[i].qs[m], t) - 1) * d;
    }
    for (int t = 0; t < 4; ++t) {
      for (int j = 0; j < static_cast<int>(sizeof(BlockTQ1_0::qh)); ++j) {
        *dst++ = static_cast<float>(tq1_trit(b[i].qh[j], t) - 1) * d;
      }
    }
  }
}

void dequant_tq2_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockTQ2_0*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < kQKK / 4; j += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int m = 0; m < 32; ++m) {
          *dst++ = static_cast<float>(((b[i].qs[j + m] >> shift) & 3) - 1) * d;
        }
      }
    }
  }
}

}  // namespace ferrite::quant::ref
