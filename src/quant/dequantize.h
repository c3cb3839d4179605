// Dequantization entry points: one row (or any run of whole blocks) of any
// supported type to float32 or float16.
#pragma once

#include <cstdint>

#include "gguf/tensor_type.h"

namespace ferrite::quant {

// `n` elements of `type` at `src` to float32 with the fastest kernel for this
// CPU. Throws InvalidArgument for an unsupported type or when n is not a
// multiple of the type's block size.
void dequantize_row(TensorType type, const void* src, float* dst, int64_t n);

// Same with the plain reference kernel (bit-identical output).
void dequantize_row_ref(TensorType type, const void* src, float* dst, int64_t n);

// `n` elements to IEEE half (round to nearest even from the float32 value).
void dequantize_row_f16(TensorType type, const void* src, uint16_t* dst, int64_t n);

// Quantizes `n_rows` rows of `n_per_row` floats to `type` (rows laid out one
// after another in `dst`). `importance` is n_per_row weights or nullptr.
// Returns the bytes written. Throws InvalidArgument for a type ferrite cannot
// quantize to, a bad row length, or a type that needs an importance matrix
// when none is given.
uint64_t quantize_rows(TensorType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                       const float* importance);

}  // namespace ferrite::quant
