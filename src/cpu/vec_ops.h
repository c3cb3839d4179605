// Vector primitives under every matrix product and attention: dot products of
// rows stored as f32, f16 or bf16, conversions, and y += a*x. One table per
// instruction-set level; vec_ops() is the table for the active level.
#pragma once

#include <cstdint>

#include "cpu/features.h"

namespace ferrite::cpu {

struct VecOps {
  // sum_i a[i] * b[i], accumulated in f32. Summation order (it decides the
  // rounding, and with it how closely we reproduce llama.cpp): n a multiple
  // of 16 uses one 16-lane accumulator (llama.cpp's tiled GEMM); other n use
  // four 16-lane accumulators over blocks of 64, combined as (0+2)+(1+3),
  // then a scalar tail (llama.cpp's vector dot). Every x86 level sums in
  // this order (AVX2 holds a 16-lane accumulator as two 8-lane halves), so
  // AVX2 and AVX-512 return the same bits (tests/cpu/vec_order_test.cpp).
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  // Both operands IEEE half (same orders; the f16 tail is summed in double).
  float (*dot_f16)(const uint16_t* a, const uint16_t* b, int64_t n);
  // Always the vector-dot order (llama.cpp's expert matrix products use it).
  float (*dot_f32_unrolled)(const float* a, const float* b, int64_t n);
  float (*dot_f16_unrolled)(const uint16_t* a, const uint16_t* b, int64_t n);
  // Both operands bfloat16.
  float (*dot_bf16)(const uint16_t* a, const uint16_t* b, int64_t n);
  // Conversions with round-to-nearest-even.
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_bf16)(const float* x, uint16_t* y, int64_t n);
  // y[i] += a * x[i] with x in f16 (attention's weighted sum of V rows).
  void (*axpy_f16)(float a, const uint16_t* x, float* y, int64_t n);
  // x[i] = exp(x[i] - max) and returns the sum (in double). Whole groups of
  // 16 use fast_exp (see fast_exp.h), the remainder libm's expf, which is
  // how llama.cpp's AVX-512 softmax splits the row.
  double (*softmax_exp)(float* x, int64_t n, float max);
  // y[i] = x[i] / (1 + exp(-x[i])), with the same split between fast_exp and expf.
  void (*silu)(const float* x, float* y, int64_t n);
  // Rotation of n pairs (a[i*stride], b[i*stride]) by angles with cos c[i],
  // sin s[i]: a' = fma(a, c, -(b*s)), b' = fma(a, s, b*c) (fused as
  // llama.cpp's compiled RoPE is).
  void (*rotate)(float* a, float* b, const float* c, const float* s, int64_t n, int64_t stride);
  // Register-blocked tiles of the matrix product: for r < n_rows <= 4 and
  // t < n_tok <= 4, y[t * y_stride + r] = dot(w + r * w_stride, a + t * a_stride, n),
  // each exactly as dot_f32 / dot_f16 / dot_bf16 computes it (same order).
  void (*tile_f32)(const float* w, int64_t w_stride, int64_t n_rows, const float* a, int64_t a_stride,
                   int64_t n_tok, int64_t n, float* y, int64_t y_stride);
  void (*tile_f16)(const uint16_t* w, int64_t w_stride, int64_t n_rows, const uint16_t* a, int64_t a_stride,
                   int64_t n_tok, int64_t n, float* y, int64_t y_stride);
  void (*tile_bf16)(const uint16_t* w, int64_t w_stride, int64_t n_rows, const uint16_t* a, int64_t a_stride,
                    int64_t n_tok, int64_t n, float* y, int64_t y_stride);
};

// Largest tile the tile_* functions take.
constexpr int64_t kTileRows = 4;
constexpr int64_t kTileTokens = 4;

// A tile computed with one dot product per element (the generic tile).
template <typename T>
inline void tile_by_dots(float (*dot)(const T*, const T*, int64_t), const T* w, int64_t w_stride, int64_t n_rows,
                         const T* a, int64_t a_stride, int64_t n_tok, int64_t n, float* y, int64_t y_stride) {
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < n_rows; ++r) y[t * y_stride + r] = dot(w + r * w_stride, a + t * a_stride, n);
  }
}

// Elements of a row evaluated with fast_exp before the libm remainder.
constexpr int64_t kExpGroup = 16;

// The table of one level (a lower level when the build lacks that path).
const VecOps& vec_ops_for(Isa isa);
// The table of active_isa().
const VecOps& vec_ops();

// Per-level tables (defined in vec_ops_ref.cpp, vec_ops_avx2.cpp, vec_ops_avx512.cpp).
const VecOps& vec_ops_ref();
const VecOps& vec_ops_avx2();
const VecOps& vec_ops_avx512();
const VecOps& vec_ops_neon();  // vec_ops_neon.cpp, aarch64 builds only

}  // namespace ferrite::cpu
