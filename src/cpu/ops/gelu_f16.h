// GELU as llama.cpp's CPU backend evaluates it: the tanh approximation
// tabulated over every f16 input, so an f32 input is rounded to f16, looked
// up, and the f16 result widened; inputs <= -10 give 0 and >= 10 give x.
// Matching this rounding keeps GELU models within 1e-3 of llama.cpp's logits.
#pragma once

#include <cstdint>

namespace ferrite::cpu {

// The tabulated GELU of one value.
float gelu_f16(float x);

// In place over n values.
void gelu_f16_inplace(float* x, int64_t n);

// y[i] = gelu_f16(gate[i]) * up[i]; y may alias either.
void geglu_f16(const float* gate, const float* up, int64_t n, float* y);

// The table: f16 bits of x -> f16 bits of gelu(x), for every f16 x, plus
// one padding entry (a 32-bit gather at the last index stays inside).
const uint16_t* gelu_f16_table();

// AVX-512 versions (gelu_f16_avx512.cpp), bit for bit the scalar ones:
// y[i] = gelu_f16(x[i]) * up[i], or gelu_f16(x[i]) when up is nullptr.
void geglu_f16_avx512(const uint16_t* table, const float* x, const float* up, int64_t n, float* y);
// AVX2 (gelu_f16_avx2.cpp), the same.
void geglu_f16_avx2(const uint16_t* table, const float* x, const float* up, int64_t n, float* y);

}  // namespace ferrite::cpu
