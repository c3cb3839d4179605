// Packed (16-row interleaved) layouts of the other 32-element types, Q4_1,
// Q5_0, Q5_1, IQ4_NL and MXFP4, and their products with Q8_0 / Q8_1 activations
// (packed.h describes Q4_0/Q8_0, packed_matmul.h the kernel interface).
//
// Group block b of 16 rows (the same bytes as the 16 plain blocks):
//   [16 x f16 d (MXFP4: 16 x u8 e)] [16 x f16 m: Q4_1, Q5_1] [16 x u32 qh: Q5_0, Q5_1]
//   then for j = 0..3, r = 0..15: qs[r][4j .. 4j+3]
// (qs byte i holds element i in its low nibble and element i + 16 in its
// high one; bit e of qh is the fifth bit, 16, of element e).
//
// Products per token and block, exact integer sums s:
//   Q5_0:   s = sum q a - 16 sum a,  y = fma(f32(s), d_w d_a, y)    (q = nibble + fifth bit)
//   IQ4_NL: s = sum v a,             y = fma(f32(s), d_w d_a, y)    (v = kIq4nlValues[nibble])
//   MXFP4:  s = sum v a,             y = fma(f32(s), d_w d_a, y)    (v = kMxfp4Values[nibble],
//           d_w = mxfp4_scale(e), quant/mxfp4.h)
//   Q4_1, Q5_1: s = sum q a,  y += (d_w d_a) f32(s) + m_w s_a       (llama.cpp's order; s_a
//           is Q8_1's f16(d sum a) with d = amax / 127 unrounded: PackedActs::s)
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/packed/packed_matmul.h"
#include "gguf/tensor_type.h"

namespace ferrite::cpu {

// True for the five types above.
bool packed_legacy_type(TensorType type);

// Bytes of one group block of a legacy type (16 plain blocks).
int64_t packed_legacy_block_bytes(TensorType type);

// One group of 16 rows of n_blocks blocks each (rows row_bytes apart).
void pack_legacy_group(TensorType type, const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed);
void unpack_legacy_group(TensorType type, const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain);

// The layout's reference kernel and the AVX2 one (nullptr for other types).
PackedKernel packed_legacy_ref(TensorType type);
PackedKernel packed_legacy_avx2(TensorType type);

}  // namespace ferrite::cpu
