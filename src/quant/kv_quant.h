// Rows of a quantized KV cache (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl; 32
// values per block): which types a cache may use, the byte size of a row,
// quantizing a row when K/V are written, and reading one back as f16 for
// attention. An f32 or bf16 cache keeps its rows the same way (plain rows of
// any length; attention reads them as they are, cpu/attention/attention_rows.h).
#pragma once

#include <cstdint>

#include "gguf/tensor_type.h"

namespace ferrite::quant {

constexpr int64_t kKvQuantBlock = 32;  // values per block of every cache type

// True for the block types above (f16 is not a quantized cache type).
bool kv_quant_supported(TensorType type);

// True for f32 and bf16 (float rows, not transposed, no block constraint).
bool kv_float_row(TensorType type);

// Bytes of a row of n values (n a multiple of kKvQuantBlock for the block types).
int64_t kv_quant_row_bytes(TensorType type, int64_t n);

// Quantizes x[0, n) into a row (f32: copied; bf16: rounded to nearest even). q8_0, q4_0, q4_1, q5_0 and q5_1 round each
// value to the nearest step of its block's scale (the scale from the block's
// extreme values, as ggml's reference quantizers); iq4_nl picks the best
// scale for its non-linear grid.
void kv_quantize_row(TensorType type, const float* x, uint8_t* row, int64_t n);

// The row back as f16: out[i * stride] = x[i], i in [0, n). tmp: n floats.
void kv_row_to_f16(TensorType type, const uint8_t* row, int64_t n, uint16_t* out, int64_t stride, float* tmp);

// The row back as f32 (out[0, n)).
void kv_row_to_f32(TensorType type, const uint8_t* row, int64_t n, float* out);

}  // namespace ferrite::quant
