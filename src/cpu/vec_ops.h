// Vector primitives under every matrix product and attention: dot products of
// rows stored as f32, f16 or bf16, conversions, and y += a*x. One table per
// instruction-set level; vec_ops() is the table for the active level.
#pragma once

#include <cstdint>

#include "cpu/features.h"

namespace ferrite::cpu {

struct VecOps {
  // sum_i a[i] * b[i], accumulated in f32.
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  // Both operands IEEE half.
  float (*dot_f16)(const uint16_t* a, const uint16_t* b, int64_t n);
  // Both operands bfloat16.
  float (*dot_bf16)(const uint16_t* a, const uint16_t* b, int64_t n);
  // Conversions with round-to-nearest-even.
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  void (*f16_to_f32)(const uint16_t* x, float* y, int64_t n);
  void (*f32_to_bf16)(const float* x, uint16_t* y, int64_t n);
  // y[i] += a * x[i] with x in f16 (attention's weighted sum of V rows).
  void (*axpy_f16)(float a, const uint16_t* x, float* y, int64_t n);
};

// The table of one level (a lower level when the build lacks that path).
const VecOps& vec_ops_for(Isa isa);
// The table of active_isa().
const VecOps& vec_ops();

// Per-level tables (defined in vec_ops_ref.cpp, vec_ops_avx2.cpp, vec_ops_avx512.cpp).
const VecOps& vec_ops_ref();
const VecOps& vec_ops_avx2();
const VecOps& vec_ops_avx512();

}  // namespace ferrite::cpu
