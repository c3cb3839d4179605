// RMSNorm and SwiGLU fused with the conversion of their output for the next
// product (outside the exact mode): one launch writes y (f32) and the 8-bit
// blocks (Q8_0 or Q8_K) or f16 values the product reads, instead of a second
// launch that reads y back.
//
// Layout: a warp holds 256 consecutive values of a row, lane l the values
// 8l .. 8l+7 (two 16-byte loads), so that a Q8_K block is one warp and a
// Q8_0 block four lanes. The conversions are those of act_quant.cu and
// to_f16 (the same operations on the same values); the norm's sum of squares
// is taken in another order than rms_norm's, so y may differ from it in the
// last bit of the scale. SwiGLU's values are swiglu()'s.
//
// Both kernels are launched as programmatic dependents and let the next
// kernel launch early (pdl.cuh): a product launched after them loads its
// weights while they run.
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/ops.h"
#include "cuda/kernels/pdl.cuh"

namespace ferrite::cuda {
namespace {

constexpr int kPerLane = 8;                   // consecutive values per lane
constexpr int kGroup = kPerLane * kWarp;      // values per warp (one Q8_K block)
constexpr int kQ8Block = 32;                  // Q8_0 block
constexpr int kLanesPerQ8 = kQ8Block / kPerLane;
constexpr float kQ8Max = 127.0f;
constexpr int kMaxNormThreads = 1024;
constexpr int kSwigluWarps = 4;               // warps per block of swiglu_act

struct Out {
  int kind;  // 0: Q8_0, 1: Q8_K, 2: f16
  int8_t* qs;
  float* d;
  int32_t* sums;
  uint16_t* f16;
};
constexpr int kOutQ8_0 = 0, kOutQ8K = 1, kOutF16 = 2;

__device__ __forceinline__ void load8(const float* p, float (&v)[kPerLane]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
  v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
}

__device__ __forceinline__ void store8(float* p, const float (&v)[kPerLane]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}

__device__ __forceinline__ void store_q8(int8_t* p, const int (&q)[kPerLane]) {
  uint32_t lo = 0, hi = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    lo |= (static_cast<uint32_t>(q[j]) & 0xFFu) << (8 * j);
    hi |= (static_cast<uint32_t>(q[j + 4]) & 0xFFu) << (8 * j);
  }
  *reinterpret_cast<uint2*>(p) = make_uint2(lo, hi);
}

// Converts the 8 values v of flat element e (a multiple of 8; row-major
// [rows, n], n a multiple of the block) for lanes that hold values (valid);
// every lane of the warp must call it (shuffles).
__device__ __forceinline__ void convert8(const Out& o, int64_t e, const float (&v)[kPerLane], bool valid) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (o.kind == kOutF16) {
    if (!valid) return;
    uint32_t h[kPerLane / 2];
#pragma unroll
    for (int j = 0; j < kPerLane / 2; ++j) {
      h[j] = static_cast<uint32_t>(__half_as_ushort(__float2half_rn(v[2 * j]))) |
             (static_cast<uint32_t>(__half_as_ushort(__float2half_rn(v[2 * j + 1]))) << 16);
    }
    *reinterpret_cast<uint4*>(o.f16 + e) = make_uint4(h[0], h[1], h[2], h[3]);
    return;
  }
  if (o.kind == kOutQ8_0) {
    // act_quant.cu quantize_q8_0_kernel: d = amax / 127, q = rint(x * (127 / amax)).
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) amax = fmaxf(amax, fabsf(v[j]));
    amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, 2));
    const float d = amax / kQ8Max;
    const float id = amax != 0.0f ? kQ8Max / amax : 0.0f;
    int q[kPerLane], sum = 0;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      q[j] = __float2int_rn(v[j] * id);
      sum += q[j];
    }
    sum += __shfl_xor_sync(kFullMask, sum, 1);
    sum += __shfl_xor_sync(kFullMask, sum, 2);
    if (!valid) return;
    store_q8(o.qs + e, q);
    if (lane % kLanesPerQ8 == 0) {
      o.d[e / kQ8Block] = __half2float(__float2half_rn(d));
      o.sums[e / kQ8Block] = sum;
    }
    return;
  }
  // Q8_K (act_quant.cu quantize_q8_k_kernel): the first value of largest
  // magnitude v, iscale = -127 / v, q = min(127, rint(iscale * x)), d = 1 / iscale.
  float amax = 0.0f, vmax = 0.0f;
  int imax = 0;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    if (fabsf(v[j]) > amax) {
      amax = fabsf(v[j]);
      vmax = v[j];
      imax = lane * kPerLane + j;
    }
  }
#pragma unroll
  for (int o2 = kWarp / 2; o2 > 0; o2 >>= 1) {
    const float a2 = __shfl_xor_sync(kFullMask, amax, o2);
    const float v2 = __shfl_xor_sync(kFullMask, vmax, o2);
    const int i2 = __shfl_xor_sync(kFullMask, imax, o2);
    if (a2 > amax || (a2 == amax && i2 < imax)) {
      amax = a2;
      vmax = v2;
      imax = i2;
    }
  }
  if (!valid) return;
  int q[kPerLane];
  int sum = 0;
  float d = 0.0f;
  if (amax == 0.0f) {
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) q[j] = 0;
  } else {
    const float iscale = -kQ8Max / vmax;
    d = 1.0f / iscale;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      q[j] = min(127, __float2int_rn(iscale * v[j]));
      sum += q[j];
    }
  }
  // Lanes 4c .. 4c+3 hold 32-block c (all lanes of a Q8_K block are valid).
  sum += __shfl_xor_sync(kFullMask, sum, 1);
  sum += __shfl_xor_sync(kFullMask, sum, 2);
  store_q8(o.qs + e, q);
  if (lane % kLanesPerQ8 == 0) {
    o.d[e / kQ8Block] = d;
    o.sums[e / kQ8Block] = sum;
  }
}

// One block per row; the block's warps take the row's 256-value groups in turn.
// Where every warp has at most one group (rows up to kMaxNormThreads / kWarp
// groups), the values stay in registers between the sum of squares and the
// conversion (one round of loads instead of two on the step's critical
// path); the sums are the same either way (thread t sums values 8t .. 8t+7).
// x and y may alias: a thread reads its 8 values of x before it writes them.
__global__ void rms_norm_act_kernel(const float* x, const float* __restrict__ w, float eps, int64_t n, float* y,
                                    const Out o) {
  launch_dependents();
  grid_dependency_wait();  // launched with pdl (pdl.cuh)
  __shared__ double scratch[kWarp];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * n;
  const int64_t n_vec = n / kPerLane;
  const int warp = static_cast<int>(threadIdx.x / kWarp), lane = static_cast<int>(threadIdx.x % kWarp);
  const int n_warps = static_cast<int>(blockDim.x / kWarp);
  const int64_t n_groups = (n + kGroup - 1) / kGroup;
  auto load_w = [&](int64_t e, float (&wv)[kPerLane]) {
    if (w != nullptr) {
      load8(w + e, wv);
    } else {
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) wv[j] = 1.0f;
    }
  };
  const bool one_pass = n_groups <= n_warps;
  const int64_t e1 = static_cast<int64_t>(warp) * kGroup + kPerLane * lane;  // one_pass: this thread's values
  float xv[kPerLane] = {}, wv[kPerLane] = {};
  double sum = 0.0;
  if (one_pass) {
    if (e1 < n) {
      load8(xr + e1, xv);
      load_w(e1, wv);
      float s = 0.0f;
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) s = __fmaf_rn(xv[j], xv[j], s);
      sum = static_cast<double>(s);
    }
  } else {
    for (int64_t i = threadIdx.x; i < n_vec; i += blockDim.x) {
      float v[kPerLane];
      load8(xr + kPerLane * i, v);
      float s = 0.0f;
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) s = __fmaf_rn(v[j], v[j], s);
      sum += static_cast<double>(s);
    }
  }
  sum = block_sum(sum, scratch);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / sqrtf(mean + eps);
  if (one_pass) {
    if (warp >= n_groups) return;  // whole warps
    const bool valid = e1 < n;
    float v[kPerLane] = {};
    if (valid) {
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) v[j] = (xv[j] * scale) * wv[j];
      store8(y + row * n + e1, v);
    }
    convert8(o, row * n + e1, v, valid);
    return;
  }
  for (int64_t g = warp; g < n_groups; g += n_warps) {
    const int64_t e = g * kGroup + kPerLane * lane;  // within the row
    const bool valid = e < n;
    float v[kPerLane] = {};
    if (valid) {
      float xg[kPerLane], wg[kPerLane];
      load8(xr + e, xg);
      load_w(e, wg);
#pragma unroll
      for (int j = 0; j < kPerLane; ++j) v[j] = (xg[j] * scale) * wg[j];
      store8(y + row * n + e, v);
    }
    convert8(o, row * n + e, v, valid);
  }
}

// One warp per 256-value group of a row.
__global__ void swiglu_act_kernel(const float* __restrict__ gate, const float* up, int64_t rows, int64_t n,
                                  float* y, const Out o) {
  launch_dependents();
  grid_dependency_wait();  // launched with pdl (pdl.cuh)
  const int64_t groups_per_row = (n + kGroup - 1) / kGroup;
  const int64_t g = static_cast<int64_t>(blockIdx.x) * kSwigluWarps + threadIdx.x / kWarp;
  if (g >= rows * groups_per_row) return;  // whole warps
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const int64_t row = g / groups_per_row;
  const int64_t e = (g % groups_per_row) * kGroup + kPerLane * lane;
  const bool valid = e < n;
  float v[kPerLane] = {};
  if (valid) {
    float gv[kPerLane], uv[kPerLane];
    load8(gate + row * n + e, gv);
    load8(up + row * n + e, uv);
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const float silu = gv[j] / (1.0f + row_exp(-gv[j], e + j, n));
      v[j] = silu * uv[j];
    }
    store8(y + row * n + e, v);
  }
  convert8(o, row * n + e, v, valid);
}

Out out_of(const ActOut& a) {
  if (a.f16 != nullptr) return {kOutF16, nullptr, nullptr, nullptr, a.f16};
  return {a.format == ActFormat::Q8_0 ? kOutQ8_0 : kOutQ8K, a.quant.qs, a.quant.d, a.quant.sums, nullptr};
}

void check_out(const ActOut& out, int64_t n, const char* who) {
  if (!act_out_supports(out, n)) {
    throw InvalidArgument(std::string(who) + ": row length " + std::to_string(n) +
                          " does not fit the output conversion (or no output buffer)");
  }
}

}  // namespace

bool act_out_supports(const ActOut& out, int64_t n) {
  if (n <= 0) return false;
  if (out.f16 != nullptr) return n % kPerLane == 0;
  if (out.format == ActFormat::Q8_1) return false;  // its s per block is not written here
  if (out.quant.qs == nullptr || out.quant.d == nullptr || out.quant.sums == nullptr) return false;
  return n % (out.format == ActFormat::Q8_0 ? kQ8Block : kGroup) == 0;
}

void rms_norm_act(const float* x, const float* w, float eps, int64_t rows, int64_t n, float* y, const ActOut& out,
                  cudaStream_t s) {
  if (rows == 0) return;
  check_out(out, n, "rms_norm_act");
  // Enough warps that each takes one or two groups, at most kMaxNormThreads.
  const int64_t warps = std::min<int64_t>(kMaxNormThreads / kWarp, (n + kGroup - 1) / kGroup);
  launch_kernel(rms_norm_act_kernel, dim3(static_cast<unsigned>(rows)), dim3(static_cast<unsigned>(warps * kWarp)), 0,
                s, pdl_chain_enabled(), x, w, eps, n, y, out_of(out));
}

void swiglu_act(const float* gate, const float* up, int64_t rows, int64_t n, float* y, const ActOut& out,
                cudaStream_t s) {
  if (rows * n == 0) return;
  check_out(out, n, "swiglu_act");
  const int64_t warps = rows * ((n + kGroup - 1) / kGroup);
  const auto blocks = static_cast<unsigned>((warps + kSwigluWarps - 1) / kSwigluWarps);
  launch_kernel(swiglu_act_kernel, dim3(blocks), dim3(kSwigluWarps * kWarp), 0, s, pdl_chain_enabled(), gate, up, rows,
                n, y, out_of(out));
}

}  // namespace ferrite::cuda
