// Device helpers shared by the kernels: warp/block reductions and exp as
// the CPU kernels compute it (cpu/fast_exp.h: the same polynomial, constants
// and fused multiply-adds, so softmax and SiLU give the same floats).
#pragma once

#include <cstdint>

#include "cpu/ops/tanh_f32_impl.h"

namespace ferrite::cuda {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xFFFFFFFFu;
// CPU SiLU/softmax use the polynomial exp on whole groups of this many
// elements and libm's exp on the tail of a row (cpu/vec_ops.h kExpGroup).
constexpr int64_t kExpGroup = 16;

// Each operation rounded on its own (no contraction), for the libm
// algorithms of cpu/ops/tanh_f32_impl.h.
struct RoundedOps {
  static __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
  static __device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
  static __device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
  static __device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
  static __device__ __forceinline__ uint32_t bits(float x) { return __float_as_uint(x); }
  static __device__ __forceinline__ float from(uint32_t u) { return __uint_as_float(u); }
};

// cpu::tanh_f32's bits (CUDA's tanhf is up to 2 ulp from it).
__device__ __forceinline__ float tanh_f32(float x) { return cpu::tanh_detail::tanh_f32<RoundedOps>(x); }

// cpu::softcap_f32: tanh_f32(x * (1 / cap)) * cap.
__device__ __forceinline__ float softcap_f32(float x, float cap) {
  return __fmul_rn(tanh_f32(__fmul_rn(x, __fdiv_rn(1.0f, cap))), cap);
}

__device__ __forceinline__ float fast_exp(float x) {
  constexpr float kShift = 0x1.8p23f;
  constexpr float kLog2e = 0x1.715476p+0f;
  constexpr float kLn2Hi = 0x1.62e4p-1f;
  constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
  constexpr float kP1 = 0x1.ffffecp-1f;
  constexpr float kP2 = 0x1.fffdb6p-2f;
  constexpr float kP3 = 0x1.555e66p-3f;
  constexpr float kP4 = 0x1.573e2ep-5f;
  constexpr float kP5 = 0x1.0e4020p-7f;
  constexpr float kMaxExponent = 192.0f;
  if (isnan(x)) return x;
  const float z = __fmaf_rn(x, kLog2e, kShift);
  const float n = z - kShift;
  if (fabsf(n) > kMaxExponent) return n > 0 ? INFINITY : 0.0f;
  const float b = __fmaf_rn(-n, kLn2Lo, __fmaf_rn(-n, kLn2Hi, x));
  const float u = b * b;
  const float j = __fmaf_rn(__fmaf_rn(__fmaf_rn(kP5, b, kP4), u, __fmaf_rn(kP3, b, kP2)), u,
                            __fmaf_rn(kP1, b, 1.0f));
  return ldexpf(j, static_cast<int>(n));
}

// exp of element i of a row of n as the CPU row kernels compute it. The
// tail's libm expf is (all but) correctly rounded; CUDA's expf is not (2 ulp),
// so the tail goes through double.
__device__ __forceinline__ float row_exp(float x, int64_t i, int64_t n) {
  return i < n - n % kExpGroup ? fast_exp(x) : static_cast<float>(exp(static_cast<double>(x)));
}

// The factor that turns a row's sum of exp(s_j - m) * v_j into its output,
// given the running maximum m and sum l of exp(s_j - m): 1 / l, or with an
// attention sink (cpu::softmax_inplace with a sink; sinks null: none) the
// sink joins the maximum and the denominator. Zero for a row with nothing
// visible (as the CPU: zeros).
__device__ __forceinline__ float softmax_out_scale(float m, float l, const float* sinks, int64_t h) {
  if (sinks == nullptr) return l > 0.0f ? 1.0f / l : 0.0f;
  if (m == -INFINITY || !(l > 0.0f)) return 0.0f;
  const float s = sinks[h], mm = fmaxf(m, s);
  const float c = expf(m - mm);
  return c / (l * c + expf(s - mm));
}

// A 16-byte load of data no kernel writes (weights), through the
// non-coherent path without allocating in L1 (read once: the L1 stays for
// the activations). volatile: it stays where it is written, ahead of any
// wait for an earlier kernel.
__device__ __forceinline__ int4 load_stream(const void* p) {
  int4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every
// thread gets the result. `scratch` holds 32 values.
template <typename T>
__device__ T block_sum(T v, T* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, n_warps = blockDim.x / kWarp;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < n_warps ? scratch[lane] : T(0);
  return warp_sum(v);
}

__device__ inline float block_max(float v, float* scratch) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, n_warps = blockDim.x / kWarp;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < n_warps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

}  // namespace ferrite::cuda
