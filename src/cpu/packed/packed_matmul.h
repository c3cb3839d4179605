// Products of packed weights (packed.h) with activations quantized to Q8_0:
// a group of 16 rows times up to kPackTokens tokens per call.
//
// Per block b and token t, with w the 16 rows' unsigned values (Q4_0
// nibbles, Q8_0 values + 128) and a the token's int8 values:
//   s[r] = sum_i w[r][i] a[i] - offset * sum_i a[i]      (exact, int32)
//   y[t][r] += f32(s[r]) * (d_w[r] * d_a)                (one FMA per block)
// with offset 8 for Q4_0 and 128 for Q8_0, summed over blocks in order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "cpu/features.h"
#include "gguf/tensor_type.h"

namespace ferrite::cpu {

// Tokens per kernel call (register tile: one int32 and one f32 accumulator each).
constexpr int64_t kPackTokens = 8;

// The activations of a product: rows of Q8_0 blocks and, per token and
// block, the block's scale as f32 and the sum of its values.
struct PackedActs {
  const uint8_t* q8 = nullptr;    // [m, n_blocks] BlockQ8_0
  size_t row_bytes = 0;           // bytes of one token's row
  const float* d = nullptr;       // [m, n_blocks]
  const int32_t* sum = nullptr;   // [m, n_blocks]
  int64_t n_blocks = 0;           // k / 32
  // Q8_1 (Q4_1 and Q5_1 weights, packed_legacy.h): per token and block
  // f16(d * sum) widened, with d = amax / 127 unrounded; else nullptr.
  const float* s = nullptr;
};

// A kernel's instances per token count, indexed by nt - 1:
// {make.template operator()<1>(), ..., make.template operator()<kCount>()},
// e.g. per_token_count([]<int NT>() { return &group_kernel<NT>; }).
template <int kCount = static_cast<int>(kPackTokens), typename Make>
constexpr auto per_token_count(Make make) {
  return [&]<int... I>(std::integer_sequence<int, I...>) {
    return std::array{make.template operator()<I + 1>()...};
  }(std::make_integer_sequence<int, kCount>{});
}

// The driver of the kernels that take all of a call's tokens kChunk at a
// time: Make{}.template operator()<NT>() is the instance computing NT
// tokens (1 <= NT <= kChunk), called (group, a, t0, y, ys). (Make is a
// lambda of the kernel's own file, so each level's instance stays its own.)
template <int kChunk, typename Make>
void run_token_chunks(Make, const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y,
                      int64_t ys) {
  static constexpr auto kFns = per_token_count<kChunk>([]<int NT>() { return Make{}.template operator()<NT>(); });
  for (int64_t t = 0; t < nt; t += kChunk) {
    const int64_t n = nt - t < kChunk ? nt - t : kChunk;
    kFns[n - 1](group, a, t0 + t, y + t * ys, ys);
  }
}

// The driver of the kernels that take a 16-row group as two halves of 8
// rows: Make{}.template operator()<NT, H>() is the instance computing NT
// tokens times H halves from half h0, called (group, h0, a, t0, y, ys). One
// token takes both halves in one pass, so that the memory streams the
// group's lines once; more take chunks of up to kChunk tokens, one pass per
// half (the weights of a half decoded once for the chunk).
template <int kChunk, typename Make>
void run_halves(Make, const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  static_assert(kChunk <= kPackTokens);
  if (nt == 1) {
    Make{}.template operator()<1, 2>()(group, 0, a, t0, y, ys);
    return;
  }
  static constexpr auto kFns = per_token_count<kChunk>([]<int NT>() { return Make{}.template operator()<NT, 1>(); });
  for (int64_t t = 0; t < nt; t += kChunk) {
    const int64_t n = nt - t < kChunk ? nt - t : kChunk;
    for (int64_t half = 0; half < 2; ++half) kFns[n - 1](group, half, a, t0 + t, y + t * ys, ys);
  }
}

// y[t * y_stride + r] = row r of `group` (16 packed rows) · token t0 + t,
// for t < nt (1 <= nt <= kPackTokens), r < 16.
using PackedKernel = void (*)(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y,
                              int64_t y_stride);

// The fast kernel for packed weights of `type` at level `isa`, or nullptr
// (then products use the plain rows, which packing leaves in place).
PackedKernel find_packed_kernel(TensorType type, Isa isa);

// Per-level tables: nullptr when absent.
PackedKernel packed_kernel_ref(TensorType type);
PackedKernel packed_kernel_avx2(TensorType type);    // Q4_0, Q8_0 (packed_matmul_avx2.cpp)
PackedKernel packed_kernel_avx512(TensorType type);

// Two adjacent 16-row groups per call (y: their 32 rows): the level's
// kernel where it has one (Q4_0 and Q8_0 at AVX-512,
// packed_matmul_avx512.cpp), else nullptr.
PackedKernel find_packed_pair_kernel(TensorType type);
PackedKernel packed_pair_kernel_avx512(TensorType type);

// Token tile of the AMX kernels (one 16 x 16 tile of outputs): they take
// nt a multiple of kAmxTokens.
constexpr int64_t kAmxTokens = 16;

// True when the CPU has AMX with int8 and bf16 tiles, the kernel lets this
// process use them (cpu_features().amx), the dispatch cap is amx
// (features.h), and configure_packed_kernels did not turn them off.
bool amx_available();

// Process-wide choices of the packed kernels, made at model load from the
// switches (backend/switches.h: FERRITE_AMX, FERRITE_REPACK_Q6K): whether
// the AMX kernels and the packed Q6_K kernel are used. Both on by default.
void configure_packed_kernels(bool amx, bool q6k);

// The AMX kernel for packed weights of `type` (nt a multiple of 16) when
// amx_available() and the active level is AVX-512, or nullptr.
PackedKernel find_packed_kernel_amx(TensorType type);
PackedKernel packed_kernel_amx_impl(TensorType type);  // packed_matmul_amx.cpp

// The kernel for tiles of 16 tokens (nt a multiple of 16) at the active
// level: the AMX kernel where find_packed_kernel_amx has one, else a type's
// many-token kernel (IQ2_XXS at AVX2: weights decoded once per call, not
// once per kPackTokens), or nullptr (then all tokens take the
// find_packed_kernel kernel).
PackedKernel find_packed_kernel_wide(TensorType type);

}  // namespace ferrite::cpu
