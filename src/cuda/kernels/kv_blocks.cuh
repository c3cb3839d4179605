// The KV cache's block types on the device (model/kv_quant.h: q8_0, q4_0,
// q4_1, q5_0, q5_1; 32 values per block, blocks stored one after another
// along a cache row [n_embd_kv]), and f16 rows read through the same calls:
// kv_load_t<T, N> / kv_load<N>: N consecutive values of a row (N divides 32,
// the first index a multiple of N, so the run never leaves its block), in
// f32 (exact: d * q, or d * q + m rounded once as the CPU's dequantizer).
// The quantizer (the CPU's bits) is kv_store.cu.
// Block layouts (little-endian, f16 scales):
//   q8_0 {d, qs[32] int8}            x = d * q
//   q4_0 {d, qs[16]}                 x = d * (q - 8)
//   q4_1 {d, m, qs[16]}              x = d * q + m
//   q5_0 {d, qh[4], qs[16]}          x = d * (q - 16)
//   q5_1 {d, m, qh[4], qs[16]}       x = d * q + m
// where element j is the low nibble of qs[j] (j < 16) or the high nibble of
// qs[j - 16], and its fifth bit (q5) bit j of qh.
// f32 and bf16 caches are plain rows of floats / bfloat16 (4 and 2 bytes a
// value, any width), read through the same calls.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>

#include "gguf/tensor_type.h"

namespace ferrite::cuda {

constexpr int kKvBlock = 32;       // values per block
constexpr int kKvHalfBlock = 16;   // nibble pairs per block
constexpr int kQ8_0Bytes = 34, kQ4_0Bytes = 18, kQ4_1Bytes = 20, kQ5_0Bytes = 22, kQ5_1Bytes = 24;

// Bytes of a block of type t (0: not a block type).
__host__ __device__ constexpr int kv_block_bytes(TensorType t) {
  return t == TensorType::Q8_0   ? kQ8_0Bytes
         : t == TensorType::Q4_0 ? kQ4_0Bytes
         : t == TensorType::Q4_1 ? kQ4_1Bytes
         : t == TensorType::Q5_0 ? kQ5_0Bytes
         : t == TensorType::Q5_1 ? kQ5_1Bytes
                                 : 0;
}

// float -> bfloat16 bits, round to nearest even (core/fp16.h fp32_to_bf16's bits; NaN kept quiet).
__device__ __forceinline__ unsigned short kv_bf16_bits(float f) {
  const unsigned int x = __float_as_uint(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);
  return static_cast<unsigned short>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ float kv_half_at(const uint8_t* p) {
  return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short*>(p)));
}

// bytes[0, N) from p, 2-byte aligned (N even: 16-bit loads).
template <int N>
__device__ __forceinline__ void kv_bytes(const uint8_t* p, uint8_t* bytes) {
  if constexpr (N % 2 == 0) {
    const auto* w = reinterpret_cast<const unsigned short*>(p);
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const unsigned short u = w[i];
      bytes[2 * i] = static_cast<uint8_t>(u & 0xFF);
      bytes[2 * i + 1] = static_cast<uint8_t>(u >> 8);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) bytes[i] = p[i];
  }
}

// Bytes of a value of a float cache type (F32, BF16, F16; 0: a block type).
__host__ __device__ constexpr int kv_float_bytes(TensorType t) {
  return t == TensorType::F32 ? 4 : t == TensorType::BF16 || t == TensorType::F16 ? 2 : 0;
}

// out[0, N) = values e .. e + N - 1 of a row of type T (F16, F32, BF16 or a
// block type; e + N within one block, e a multiple of N).
template <TensorType T, int N>
__device__ __forceinline__ void kv_load_t(const uint8_t* row, int e, float* out) {
  const int b = e / kKvBlock, off = e % kKvBlock;
  if constexpr (T == TensorType::F16) {
    const half* h = reinterpret_cast<const half*>(row) + e;
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = __half2float(h[i]);
  } else if constexpr (T == TensorType::F32) {
    const float* f = reinterpret_cast<const float*>(row) + e;
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = f[i];
  } else if constexpr (T == TensorType::BF16) {
    const unsigned short* h = reinterpret_cast<const unsigned short*>(row) + e;
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = __uint_as_float(static_cast<unsigned int>(h[i]) << 16);
  } else if constexpr (T == TensorType::Q8_0) {
    const uint8_t* blk = row + b * kQ8_0Bytes;
    const float d = kv_half_at(blk);
    uint8_t q[N];
    kv_bytes<N>(blk + 2 + off, q);
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = d * static_cast<float>(static_cast<int8_t>(q[i]));
  } else if constexpr (T == TensorType::Q4_0 || T == TensorType::Q4_1) {
    const uint8_t* blk = row + b * (T == TensorType::Q4_0 ? kQ4_0Bytes : kQ4_1Bytes);
    const float d = kv_half_at(blk);
    uint8_t q[N];
    const int shift = off < kKvHalfBlock ? 0 : 4;
    kv_bytes<N>(blk + (T == TensorType::Q4_0 ? 2 : 4) + off % kKvHalfBlock, q);
    if constexpr (T == TensorType::Q4_0) {
#pragma unroll
      for (int i = 0; i < N; ++i) out[i] = d * static_cast<float>(((q[i] >> shift) & 0xF) - 8);
    } else {
      const float m = kv_half_at(blk + 2);
#pragma unroll
      for (int i = 0; i < N; ++i) out[i] = __fadd_rn(__fmul_rn(d, static_cast<float>((q[i] >> shift) & 0xF)), m);
    }
  } else {  // Q5_0, Q5_1
    constexpr bool kOne = T == TensorType::Q5_1;
    const uint8_t* blk = row + b * (kOne ? kQ5_1Bytes : kQ5_0Bytes);
    const float d = kv_half_at(blk);
    const uint8_t* qh = blk + (kOne ? 4 : 2);
    const uint32_t high = static_cast<uint32_t>(qh[0]) | (static_cast<uint32_t>(qh[1]) << 8) |
                          (static_cast<uint32_t>(qh[2]) << 16) | (static_cast<uint32_t>(qh[3]) << 24);
    uint8_t q[N];
    const int shift = off < kKvHalfBlock ? 0 : 4;
    kv_bytes<N>(qh + 4 + off % kKvHalfBlock, q);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int v = ((q[i] >> shift) & 0xF) | static_cast<int>(((high >> (off + i)) & 1u) << 4);
      if constexpr (kOne) {
        out[i] = __fadd_rn(__fmul_rn(d, static_cast<float>(v)), kv_half_at(blk + 2));
      } else {
        out[i] = d * static_cast<float>(v - 16);
      }
    }
  }
}

// The same with the type chosen at run time.
template <int N>
__device__ __forceinline__ void kv_load(TensorType t, const uint8_t* row, int e, float* out) {
  switch (t) {
    case TensorType::Q8_0:
      return kv_load_t<TensorType::Q8_0, N>(row, e, out);
    case TensorType::Q4_0:
      return kv_load_t<TensorType::Q4_0, N>(row, e, out);
    case TensorType::Q4_1:
      return kv_load_t<TensorType::Q4_1, N>(row, e, out);
    case TensorType::Q5_0:
      return kv_load_t<TensorType::Q5_0, N>(row, e, out);
    case TensorType::Q5_1:
      return kv_load_t<TensorType::Q5_1, N>(row, e, out);
    case TensorType::F32:
      return kv_load_t<TensorType::F32, N>(row, e, out);
    case TensorType::BF16:
      return kv_load_t<TensorType::BF16, N>(row, e, out);
    default:
      return kv_load_t<TensorType::F16, N>(row, e, out);
  }
}

// A kernel's cache type as a template argument: a type, or kAnyKvType for
// the type of the parameters, read at run time (Q8_K is no cache type).
constexpr TensorType kAnyKvType = TensorType::Q8_K;

template <TensorType T, int N>
__device__ __forceinline__ void kv_read(TensorType t, const uint8_t* row, int e, float* out) {
  if constexpr (T == kAnyKvType) {
    kv_load<N>(t, row, e, out);
  } else {
    kv_load_t<T, N>(row, e, out);
  }
}

// A query value rounded as the CPU rounds it for a K cache of type t
// (cpu/attention/attention_rows.h): kept for f32, to bf16 for bf16, to f16 otherwise
// (f16 and the block types, which the CPU reads back as f16).
__device__ __forceinline__ float kv_round_q(TensorType t, float x) {
  if (t == TensorType::F32) return x;
  if (t == TensorType::BF16) return __uint_as_float(static_cast<unsigned int>(kv_bf16_bits(x)) << 16);
  return __half2float(__float2half_rn(x));
}

__device__ __forceinline__ void kv_put_half(uint8_t* p, float v) {
  *reinterpret_cast<unsigned short*>(p) = __half_as_ushort(__float2half_rn(v));
}

}  // namespace ferrite::cuda
