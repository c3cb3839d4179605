// The CPU's summation orders on the device (cpu/vec_ops.h, AVX-512 path).
// Float models only agree with llama.cpp's logits to the goldens' precision
// when every value that is later rounded to f16 (q, K, V, attention
// probabilities, F16 matrix inputs) has the same bits, so the GPU sums in the
// same order as the CPU:
//   * n a multiple of 16 ("tiled"): 16 chains, chain c = fma over elements
//     c, c+16, c+32, ... in order, then the lane tree (c, c^8), (c, c^4),
//     (c, c^2), (c, c^1) of _mm512_reduce_add_ps;
//   * other n ("unrolled"): 64 chains over the first n - n % 64 elements,
//     combined as (c, c+32), (c, c+16) and the lane tree, then a tail: f32
//     rows add products of 16 and 8 in order and fuse the last < 8; f16 rows
//     add the (exact) products in double.
// Floating-point addition is commutative bit for bit, so a butterfly
// (x + shfl_xor(x)) reproduces the tree on every lane.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>

#include "cuda/kernels/device_math.cuh"

namespace ferrite::cuda {

constexpr int kOrderLanes = 16;                  // chains of the tiled order
constexpr int kOrderStep = 4 * kOrderLanes;     // elements per step of the unrolled order
constexpr int kOrderTailBlock = kOrderLanes;     // f32 tail: products of 16, then 8
constexpr int kOrderTailHalf = kOrderLanes / 2;

// Tree of the 16 chains held in a[0..16) (one thread holding all of them).
__device__ __forceinline__ float tree16(float* a) {
#pragma unroll
  for (int o = kOrderLanes / 2; o > 0; o >>= 1) {
#pragma unroll
    for (int i = 0; i < o; ++i) a[i] = a[i] + a[i + o];
  }
  return a[0];
}

// Tree over chains held E per thread by groups of 16 / E consecutive lanes
// (lane u of the group holds chains u*E .. u*E+E-1 in c[0..E)): every lane of
// the group returns the sum. All 32 lanes of the warp must call it.
template <int E>
__device__ __forceinline__ float tree16_spread(float* c) {
#pragma unroll
  for (int o = kOrderLanes / 2; o >= E; o >>= 1) {
#pragma unroll
    for (int i = 0; i < E; ++i) c[i] = c[i] + __shfl_xor_sync(kFullMask, c[i], o / E);
  }
#pragma unroll
  for (int o = E / 2; o > 0; o >>= 1) {
#pragma unroll
    for (int i = 0; i < o; ++i) c[i] = c[i] + c[i + o];
  }
  return c[0];
}

__device__ __forceinline__ float load_as_float(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load_as_float(const half* p, int64_t i) { return __half2float(p[i]); }

// sum_i a[i] * b[i * b_stride] in the CPU's order for any n, by one thread
// (kHalfTail: both operands are f16 values, the tail is summed in double).
// Products and sums are rounded where the CPU rounds them (no contraction).
// Slow; for the odd lengths.
// The operands as functions: fa(i), fb(i) give element i (dot_cpu_order_serial
// below reads arrays through them).
template <bool kHalfTail, typename FA, typename FB>
__device__ float dot_cpu_order_fn(FA fa, FB fb, int64_t n) {
  auto prod = [&](int64_t i) { return __fmul_rn(fa(i), fb(i)); };
  auto fma_at = [&](int64_t i, float acc) { return __fmaf_rn(fa(i), fb(i), acc); };
  float c[kOrderLanes];
  if (n % kOrderLanes == 0) {
#pragma unroll
    for (int v = 0; v < kOrderLanes; ++v) c[v] = 0.0f;
    for (int64_t i = 0; i < n; i += kOrderLanes) {
#pragma unroll
      for (int v = 0; v < kOrderLanes; ++v) c[v] = fma_at(i + v, c[v]);
    }
    return tree16(c);
  }
  const int64_t np = n - n % kOrderStep;
  float head = 0.0f;
  if (np > 0) {
#pragma unroll
    for (int v = 0; v < kOrderLanes; ++v) {
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int64_t i = 0; i < np; i += kOrderStep) {
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[j] = fma_at(i + j * kOrderLanes + v, acc[j]);
      }
      c[v] = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    }
    head = tree16(c);
  }
  if constexpr (kHalfTail) {
    double sum = head;
    for (int64_t i = np; i < n; ++i) sum += static_cast<double>(prod(i));
    return static_cast<float>(sum);
  } else {
    float sum = head;
    int64_t i = np;
    for (; i + kOrderTailBlock <= n; i += kOrderTailBlock) {
      for (int j = 0; j < kOrderTailBlock; ++j) sum = __fadd_rn(sum, prod(i + j));
    }
    if (i + kOrderTailHalf <= n) {
      for (int j = 0; j < kOrderTailHalf; ++j) sum = __fadd_rn(sum, prod(i + j));
      i += kOrderTailHalf;
    }
    for (; i < n; ++i) sum = fma_at(i, sum);
    return sum;
  }
}

template <bool kHalfTail, typename A, typename B>
__device__ float dot_cpu_order_serial(const A* a, const B* b, int64_t n, int64_t b_stride = 1) {
  return dot_cpu_order_fn<kHalfTail>([=](int64_t i) { return load_as_float(a, i); },
                                     [=](int64_t i) { return load_as_float(b, i * b_stride); }, n);
}

}  // namespace ferrite::cuda
