// On-disk block layouts of the GGUF weight types (facts of the format, as
// ggml defines them). Every struct is exactly the bytes of one block; the
// static_asserts in blocks.cpp check them against gguf/tensor_type.cpp.
// 16-bit floats are kept as raw uint16_t (IEEE half unless noted).
#pragma once

#include <cstdint>

namespace ferrite::quant {

constexpr int kQK = 32;     // elements per block of the legacy types
constexpr int kQKK = 256;   // elements per super-block of K/IQ/TQ types
constexpr int kScaleBytesK = 12;  // packed 6-bit scales and mins of Q4_K/Q5_K

// x = d * (q - 8), q in 0..15; element j in low nibble of qs[j], j+16 in high.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// x = d * q + m, q in 0..15.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};

// x = d * (q - 16), q in 0..31; bit 4 of element j is bit j of qh (LE u32).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// x = d * q + m, q in 0..31.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// x = d * q, q in -127..127.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};

// Q8_0 plus s = d * sum(q) (used for activations).
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};

// 16 sub-blocks of 16: x = d * sc * q - dmin * m, 4-bit sc/m, 2-bit q.
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];  // low nibble scale, high nibble min
  uint8_t qs[kQKK / 4];
  uint16_t d;
  uint16_t dmin;
};

// 16 sub-blocks of 16: x = d * (sc - 32) * (q - 4 * !hbit), 6-bit sc.
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];
  uint16_t d;
};

// 8 sub-blocks of 32: x = d * sc * q - dmin * m, 6-bit sc/m, 4-bit q.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kScaleBytesK];
  uint8_t qs[kQKK / 2];
};

// As Q4_K with a fifth bit per element in qh.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kScaleBytesK];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};

// 16 sub-blocks of 16: x = d * sc * (q - 32), 8-bit signed sc, 6-bit q.
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};

// Intermediate 8-bit type: float scale, sums of each 16 quants.
struct BlockQ8_K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];
};

// Ternary, 1.6875 bpw: 5 trits per byte in qs (240 values), 4 per byte in qh.
struct BlockTQ1_0 {
  uint8_t qs[(kQKK - 4 * kQKK / 64) / 5];
  uint8_t qh[kQKK / 64];
  uint16_t d;
};

// Ternary, 2.0625 bpw: 2 bits per element, q - 1 in {-1, 0, 1}.
struct BlockTQ2_0 {
  uint8_t qs[kQKK / 4];
  uint16_t d;
};

// Eight 8-element groups per 32: 8-bit grid index each; a u32 per 32 with
// four 7-bit sign indices and a 4-bit scale in the top bits.
struct BlockIQ2_XXS {
  uint16_t d;
  uint16_t qs[kQKK / 8];
};

// 9-bit grid index + 7-bit sign index per 8 elements, 4-bit scale per 16.
struct BlockIQ2_XS {
  uint16_t d;
  uint16_t qs[kQKK / 8];
  uint8_t scales[kQKK / 32];
};

// 10-bit grid index (8 in qs, 2 in qh), explicit sign bytes, 4-bit scales.
struct BlockIQ2_S {
  uint16_t d;
  uint8_t qs[kQKK / 4];  // first half grid indices, second half signs
  uint8_t qh[kQKK / 32];
  uint8_t scales[kQKK / 32];
};

// 8-bit indices into a 256-entry grid of 4 values; u32 per 32 of signs+scale.
struct BlockIQ3_XXS {
  uint16_t d;
  uint8_t qs[3 * kQKK / 8];
};

// 9-bit indices into a 512-entry grid of 4 values, explicit signs.
struct BlockIQ3_S {
  uint16_t d;
  uint8_t qs[kQKK / 4];
  uint8_t qh[kQKK / 32];
  uint8_t signs[kQKK / 8];
  uint8_t scales[kQKK / 64];
};

// 11-bit indices into a 2048-entry ternary grid; 3-bit scale and delta sign
// per 32 in qh.
struct BlockIQ1_S {
  uint16_t d;
  uint8_t qs[kQKK / 8];
  uint16_t qh[kQKK / 32];
};

// As IQ1_S with a delta sign per 8 and 3-bit scales per 16; the f16 super
// scale is spread over the top nibbles of the four u16 of `scales`.
struct BlockIQ1_M {
  uint8_t qs[kQKK / 8];
  uint8_t qh[kQKK / 16];
  uint8_t scales[kQKK / 32];
};

// Non-linear 4-bit: x = d * kIq4nlValues[q].
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// IQ4_NL values with a 6-bit scale (ls - 32) per 32 elements.
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQKK / 64];
  uint8_t qs[kQKK / 2];
};

// OCP microscaling FP4: x = 2^(e - 127) * E2M1(q), e an E8M0 exponent byte
// (kept as ggml does: half of 2^(e-127) times the doubled integer table,
// quant/mxfp4.h), q a 4-bit E2M1 code; element j in the low nibble of qs[j],
// j + 16 in the high nibble. 17 bytes: no alignment beyond one byte.
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};

}  // namespace ferrite::quant
