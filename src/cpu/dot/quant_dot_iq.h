// Quantized dot products of the weight types that had none (they ran on
// dequantized rows): the lattice types IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS, IQ3_S, the non-linear IQ4_NL and IQ4_XS, the ternary TQ1_0 and
// TQ2_0, and the legacy Q4_1, Q5_0, Q5_1. Each multiplies its weights with
// the 8-bit activation format llama.cpp pairs with the type (act_quant.h:
// Q8_K for the 256-element types, Q8_0 for Q5_0/IQ4_NL/MXFP4, Q8_1 for Q4_1/Q5_1),
// as llama.cpp's vec_dot_<type>_q8_<x> does:
//
//   256-element types:  sum_b d_w d_a (sum_j w_bj a_bj), then times a type
//     constant c (IQ2_*: 1/8, IQ3_XXS: 1/4, IQ1_*: 1/8, others 1), where
//     w_bj is the weight's integer value in units of d_w c (IQ2_XXS: grid *
//     sign * (2 s + 1); IQ1_S: (8 grid + delta) * (2 s + 1); TQ: trit - 1).
//   32-element types:   sum_b (d_w d_a) s_b (+ m_w s_a for Q4_1/Q5_1).
//
// The integer sums are exact, so their order is free; the float steps are
// llama.cpp's scalar ones (one multiply-add per block, in block order) and
// the SIMD versions repeat them bit for bit.
#pragma once

#include "cpu/dot/quant_dot.h"

namespace ferrite::cpu {

// The plain reference of one of the types above (quant_dot_iq_ref.cpp,
// quant_dot_legacy_ref.cpp, quant_dot_ternary_ref.cpp), or nullptr.
// quant_dot_ref() hands these types to it.
const QuantDot* quant_dot_iq_ref(TensorType type);
const QuantDot* quant_dot_legacy_ref(TensorType type);   // Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4
const QuantDot* quant_dot_ternary_ref(TensorType type);  // TQ1_0, TQ2_0

// The AVX2 version (bit-identical to the reference, with register-blocked
// tiles), or nullptr. quant_dot_avx2() hands these types to it; the
// AVX-512 level uses it too (find_quant_dot falls through to AVX2) except
// where quant_dot_iq_avx512 has its own.
const QuantDot* quant_dot_iq_avx2(TensorType type);
const QuantDot* quant_dot_iq1_avx2(TensorType type);      // IQ1_S, IQ1_M
const QuantDot* quant_dot_legacy_avx2(TensorType type);   // Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4
const QuantDot* quant_dot_ternary_avx2(TensorType type);  // TQ1_0, TQ2_0
// The AVX-512 version of IQ2_XXS (quant_dot_iq2_avx512.cpp; the other types
// fall through to AVX2), or nullptr.
const QuantDot* quant_dot_iq_avx512(TensorType type);

// The Q8_1 activation row of k values (k a multiple of 32): Q8_0's values
// and scale, plus s = f16(d * sum q) with d = amax / 127 unrounded (what
// act_quant_q8_1_sum_correction assumes).
void quantize_q8_1_ref(const float* x, void* dst, int64_t k);

}  // namespace ferrite::cpu
