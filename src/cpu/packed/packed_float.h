// Products of packed F16/BF16 weights (packed.h: 16 rows interleaved by
// pairs of columns) with activations, a 16-row group per call.
//   BF16: activations rounded to bf16 (as the plain path does), pairs
//         multiplied exactly and summed in f32 (vdpbf16ps; AMX tdpbf16ps for
//         tiles of 16 tokens).
//   F16:  activations rounded to f16 and held as f32, products and sums in f32.
//   AVX2 (both types): the widened weights times f32 activations with FMA.
#pragma once

#include <cstdint>

#include "cpu/features.h"
#include "gguf/tensor_type.h"

namespace ferrite::cpu {

// Tokens per call of the kernels that widen a block of weights once for
// every token of the call (AVX2): matmul.cpp's token tile.
constexpr int64_t kPackFloatTokens = 64;

// The activations of a float product: [m, k] rows of bf16 (BF16 weights) or
// of f32 values already rounded to f16 (F16 weights).
struct PackedFloatActs {
  const void* data = nullptr;
  int64_t k = 0;  // row length (elements)
  // BF16 weights, for the AVX2 kernel: the same bf16 activations widened to
  // f32 (exactly), [m, k]; nullptr where the level's kernel reads `data`.
  const float* wide = nullptr;
};

// y[t * y_stride + r] = row r of `group` · activation row t0 + t, t < nt, r < 16.
// nt <= packed_float_call_tokens(), a multiple of 16 for AMX.
using PackedFloatKernel = void (*)(const uint8_t* group, const PackedFloatActs& a, int64_t t0, int64_t nt, float* y,
                                   int64_t y_stride);

PackedFloatKernel packed_float_kernel_ref(TensorType type);
PackedFloatKernel packed_float_kernel_avx2(TensorType type);  // BF16 reads PackedFloatActs::wide
PackedFloatKernel packed_float_kernel_avx512(TensorType type);
PackedFloatKernel packed_float_kernel_amx_impl(TensorType type);  // BF16 only
// Two adjacent groups per call (BF16, F16): rows r < 32 from `group` and the
// group kPackRows * k values after it; y as for one group, 32 rows wide.
PackedFloatKernel packed_float_pair_kernel_avx512(TensorType type);

// The fast kernels at the active level (nullptr when absent: the plain rows are used).
PackedFloatKernel find_packed_float_kernel(TensorType type);
PackedFloatKernel find_packed_float_kernel_amx(TensorType type);
PackedFloatKernel find_packed_float_pair_kernel(TensorType type);  // nullptr where the level has none
// The most tokens the active level's kernels take in one call:
// kPackFloatTokens at AVX2, whose kernels widen blocks of weights, else kPackTokens.
int64_t packed_float_call_tokens();

}  // namespace ferrite::cpu
