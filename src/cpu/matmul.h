// Matrix products of a weight matrix in its stored type with f32
// activations:  y[m, n] = x[m, k] · W[n, k]^T.
//
// The activations are first converted once to the operand format the
// weight type's dot product wants (f16 for F16 weights, bf16 for BF16, f32
// for F32; quantized types get their 8-bit activation format, see
// act_quant.h, and integer dot products, quant_dot.h), then the n rows of
// W are split between the pool's threads and each row is dotted with every
// activation row while it is hot in cache. Decode (m = 1) streams W once.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/thread_pool.h"
#include "gguf/tensor_type.h"

namespace ferrite::cpu {

// A 2-D weight matrix: n rows of k elements, each row `row_bytes` long.
struct MatView {
  // Rows per interleaved group of a packed matrix (cpu/packed/packed.h).
  static constexpr int64_t kPackGroupRows = 16;

  TensorType type = TensorType::F32;
  const uint8_t* data = nullptr;
  int64_t k = 0;
  int64_t n = 0;
  uint64_t row_bytes = 0;
  // The same rows repacked for the products (packed.h), or nullptr. The
  // plain rows at `data` stay valid (row lookups, other instruction sets).
  const uint8_t* packed = nullptr;

  const uint8_t* row(int64_t i) const { return data + static_cast<uint64_t>(i) * row_bytes; }
  // Rows [first, first + count) as a matrix of their own (packed too when
  // the range starts and ends on group boundaries of 16 rows).
  MatView rows(int64_t first, int64_t count) const {
    const bool whole_groups = first % kPackGroupRows == 0 && count % kPackGroupRows == 0;
    return {type, row(first), k, count, row_bytes,
            packed != nullptr && whole_groups ? packed + static_cast<uint64_t>(first) * row_bytes : nullptr};
  }
};

// Buffers reused across calls (the converted activations, per-thread rows).
struct MatmulScratch {
  std::vector<uint8_t> act;
  std::vector<std::vector<float>> rows;
  std::vector<float> corr;  // Q8_1 block-sum corrections [m, k / 32]
  std::vector<float> act_d;      // packed products: block scales [m, k / 32]
  std::vector<int32_t> act_sum;  // packed products: block sums [m, k / 32]
};

// Which summation order f32/f16 dot products use (see VecOps::dot_f32):
// Tiled for ordinary products, Unrolled for llama.cpp's expert products.
enum class DotOrder { Tiled, Unrolled };

// True when matmul() supports weights of `type`.
bool matmul_supports(TensorType type);

// y[m, n] = x[m, k] · W^T. x and y are contiguous row-major.
// Throws InvalidArgument for an unsupported weight type.
void matmul(const MatView& w, const float* x, int64_t m, float* y, ThreadPool& pool, MatmulScratch& scratch,
            DotOrder order = DotOrder::Tiled);

// Plain single-threaded reference (the same activation quantization,
// dequantized rows, dot in double) used by tests.
void matmul_ref(const MatView& w, const float* x, int64_t m, float* y);

}  // namespace ferrite::cpu
