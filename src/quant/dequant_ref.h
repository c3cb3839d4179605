// Plain reference dequantizers, one per type: `n` elements (a multiple of
// the type's block size) from `src` blocks to float32 in `dst`. They perform
// exactly the float operations the format's definition does, in the same
// order, so their output is bit-identical to ggml's.
#pragma once

#include <cstdint>

namespace ferrite::quant::ref {

void dequant_f32(const void* src, float* dst, int64_t n);
void dequant_f16(const void* src, float* dst, int64_t n);
void dequant_bf16(const void* src, float* dst, int64_t n);
void dequant_q4_0(const void* src, float* dst, int64_t n);
void dequant_q4_1(const void* src, float* dst, int64_t n);
void dequant_q5_0(const void* src, float* dst, int64_t n);
void dequant_q5_1(const void* src, float* dst, int64_t n);
void dequant_q8_0(const void* src, float* dst, int64_t n);
void dequant_q8_1(const void* src, float* dst, int64_t n);

void dequant_q2_k(const void* src, float* dst, int64_t n);
void dequant_q3_k(const void* src, float* dst, int64_t n);
void dequant_q4_k(const void* src, float* dst, int64_t n);
void dequant_q5_k(const void* src, float* dst, int64_t n);
void dequant_q6_k(const void* src, float* dst, int64_t n);
void dequant_q8_k(const void* src, float* dst, int64_t n);
void dequant_tq1_0(const void* src, float* dst, int64_t n);
void dequant_tq2_0(const void* src, float* dst, int64_t n);

void dequant_iq2_xxs(const void* src, float* dst, int64_t n);
void dequant_iq2_xs(const void* src, float* dst, int64_t n);
void dequant_iq2_s(const void* src, float* dst, int64_t n);
void dequant_iq3_xxs(const void* src, float* dst, int64_t n);
void dequant_iq3_s(const void* src, float* dst, int64_t n);
void dequant_iq1_s(const void* src, float* dst, int64_t n);
void dequant_iq1_m(const void* src, float* dst, int64_t n);
void dequant_iq4_nl(const void* src, float* dst, int64_t n);
void dequant_iq4_xs(const void* src, float* dst, int64_t n);
void dequant_mxfp4(const void* src, float* dst, int64_t n);  // quant/mxfp4.cpp

// Scale and min (6 bits each) of sub-block j (0..7) of Q4_K/Q5_K's packed
// 12-byte scales: j < 4 in the low 6 bits of bytes j and j+4; j >= 4 split
// over the nibbles of byte j+4 and the top 2 bits of bytes j-4 and j.
inline void k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The 6-bit scale (0..63, subtract 32 for the signed value) of sub-block ib
// (0..7) of an IQ4_XS block: the nibble ib % 2 of scales_l[ib / 2] below
// bits 2 ib .. 2 ib + 1 of scales_h.
inline int iq4_xs_scale(const uint8_t* scales_l, uint16_t scales_h, int ib) {
  return ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4);
}

// The sixteen 6-bit scales of Q3_K (0..63, subtract 32 for the signed value)
// from its 12 packed bytes: low nibbles in bytes 0..7, high 2 bits in 8..11.
void q3_k_unpack_scales(const uint8_t* packed, int8_t* scales16);

}  // namespace ferrite::quant::ref
