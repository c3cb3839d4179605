// Quantized matrix-vector building block: activations quantized once to an
// 8-bit block format (act_quant.h), then each weight row is dotted with them
// in integer arithmetic (AVX-512 VNNI where available), one float multiply-add
// per block. This is llama.cpp's scheme, and the path of every quantized
// weight type find_quant_dot() lists (all of them but the activation-only
// Q8_1/Q8_K, which use dequantized rows, matmul.cpp); the IQ, TQ, Q4_1,
// Q5_0, Q5_1 and IQ4_NL products are in quant_dot_iq.h.
//
// Q4_0 · Q8_0:  sum_b d_w d_a (sum_j (q_w - 8) q_a)
// Q8_0 · Q8_0:  sum_b d_w d_a (sum_j q_w q_a)
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/dot/act_quant.h"
#include "cpu/features.h"
#include "gguf/tensor_type.h"

namespace ferrite::cpu {

struct QuantDot {
  ActQuant act;  // the activation format
  // Bytes of one quantized activation row of k elements.
  size_t (*act_row_bytes)(int64_t k);
  // Quantizes k activations (k a multiple of the format's block).
  void (*quantize)(const float* x, void* dst, int64_t k);
  // Dot product of one weight row with one quantized activation row.
  float (*dot)(const void* w_row, const void* act_row, int64_t k);
  // Optional register-blocked tile (nullptr: dot per output): for r < nr <= 4
  // and t < nt <= 4, y[t * y_stride + r] = dot(w + r * w_row_bytes, act + t * act_row_bytes, k),
  // bit-identical to dot().
  void (*tile)(const uint8_t* w, size_t w_row_bytes, int64_t nr, const uint8_t* act, size_t act_row_bytes,
               int64_t nt, int64_t k, float* y, int64_t y_stride);
  // The most tokens one tile call takes (nt <= tile_tokens): kernels whose
  // weight decoding is dear decode a block once for up to this many tokens.
  int64_t tile_tokens = 4;
};

// The fast path for weights of `type` at level `isa`, or nullptr.
const QuantDot* find_quant_dot(TensorType type, Isa isa);

// Per-level tables (quant_dot_ref.cpp, quant_dot_avx2.cpp, quant_dot_avx512.cpp); nullptr when absent.
const QuantDot* quant_dot_ref(TensorType type);
const QuantDot* quant_dot_avx2(TensorType type);  // Q4_0, Q8_0, the K types (quant_dot_k_avx2), the rest (quant_dot_iq.h)
const QuantDot* quant_dot_avx512(TensorType type);
const QuantDot* quant_dot_neon(TensorType type);  // Q4_0, Q8_0, IQ4_XS, K types (quant_dot_k_neon); aarch64 only
// The same dots with tiles that multiply pairs of rows by pairs of tokens with
// SMMLA (FEAT_I8MM): Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_XS; aarch64 only.
const QuantDot* quant_dot_neon_i8mm(TensorType type);

}  // namespace ferrite::cpu
