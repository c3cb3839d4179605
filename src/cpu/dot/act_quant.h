// On-the-fly quantization of activations, as llama.cpp does before a
// quantized matrix product: each weight type is multiplied with activations
// in an 8-bit block format (Q8_0: 32 values and an f16 scale; Q8_1: the same
// plus the block sum; Q8_K: 256 values and an f32 scale).
//
// Facts of the format as llama.cpp computes it on x86:
//   Q8_0/Q8_1: d = amax / 127, q = round_half_even(x * (127 / amax)), scale stored as f16(d).
//   Q8_K:      iscale = -127 / v where v is the value of largest magnitude,
//              q = min(127, round_half_even(x * iscale)), d = 1 / iscale (f32).
#pragma once

#include <cstdint>

#include "gguf/tensor_type.h"

namespace ferrite::cpu {

enum class ActQuant { None, Q8_0, Q8_1, Q8_K };

// The activation format llama.cpp pairs with a weight type (None for float types).
ActQuant act_quant_for(TensorType weight_type);

// Block length of a format (32 or 256).
int64_t act_quant_block(ActQuant q);

// y = dequantize(quantize(x)): the values the quantized dot product
// effectively multiplies with. n must be a multiple of the block length.
void act_quant_round_trip(ActQuant q, const float* x, float* y, int64_t n);

// For Q8_1: per block of 32, f16(d * sum(q)) - sum(y), the difference
// between the block sum that Q4_1/Q5_1 products use for the weights' offset
// term (stored in f16) and the sum of the round-tripped values.
// corr has n / 32 entries.
void act_quant_q8_1_sum_correction(const float* x, const float* y, float* corr, int64_t n);

// One row of k activations (k a multiple of 256) to Q8_K blocks
// (quant::BlockQ8_K: the values above plus the sums of each 16 quants).
// The reference lives in quant_dot_ref.cpp (quant_dot_ref(Q4_K)->quantize);
// this AVX-512 version (act_quant_avx512.cpp) is bit-identical to it.
void quantize_q8_k_avx512(const float* x, void* dst, int64_t k);

// AVX2 versions (act_quant_avx2.cpp), bit-identical to the references of
// quant_dot_ref.cpp: Q8_K; Q8_0 (BlockQ8_0 rows), optionally with each
// block's scale as f32 (d_out) and the sum of its values (sum_out), the
// operands of the packed products (packed_matmul.h), or nullptr.
void quantize_q8_k_avx2(const float* x, void* dst, int64_t k);
void quantize_q8_0_avx2(const float* x, void* dst, int64_t k);
void quantize_q8_0_avx2(const float* x, void* dst, float* d_out, int32_t* sum_out, int64_t k);

// The same, in NEON (act_quant_neon.cpp, aarch64 builds only; bit-identical
// to the reference too). The NEON K-quant table (quant_dot_k_neon.cpp) uses it.
void quantize_q8_k_neon(const float* x, void* dst, int64_t k);
// Q8_0 rows (BlockQ8_0), in NEON (act_quant_neon.cpp, aarch64 builds only;
// bit-identical to the reference): the Q4_0/Q8_0 tables of quant_dot_neon.cpp.
void quantize_q8_0_neon(const float* x, void* dst, int64_t k);

}  // namespace ferrite::cpu
