// Activation quantization on the GPU, the same values as cpu/dot/act_quant.cpp:
//   Q8_0 (per 32): d = amax / 127, q = rint(x * (127 / amax)), d stored as f16.
//   Q8_1: Q8_0 plus s = f16(d * sum(q)) with d before its rounding.
//   Q8_K (per 256): v = the first value of largest magnitude, iscale = -127 / v,
//                   q = min(127, rint(iscale * x)), d = 1 / iscale.
// rint is round-half-even (__float2int_rn), as the CPU's nearbyint.
#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/ops.h"
#include "cuda/kernels/pdl.cuh"

namespace ferrite::cuda {
namespace {

constexpr int kBlock = 32;
constexpr int kBlockK = 256;
constexpr int kPerLaneK = kBlockK / kWarp;  // 8 values per lane
constexpr float kQ8Max = 127.0f;
constexpr int kWarpsPerBlock = 4;

// One warp per 32 values (one per lane); s_out (Q8_1) may be null.
__global__ void quantize_q8_0_kernel(const float* __restrict__ x, int64_t n_blocks, int8_t* __restrict__ qs,
                                     float* __restrict__ d_out, int32_t* __restrict__ sums, float* __restrict__ s_out) {
  launch_dependents();     // a product launched next may load its weights meanwhile
  grid_dependency_wait();  // launched with pdl (pdl.cuh)
  const int64_t b = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.y;
  if (b >= n_blocks) return;
  const int lane = threadIdx.x;
  const float v = x[b * kBlock + lane];
  const float amax = warp_max(fabsf(v));
  const float d = amax / kQ8Max;
  const float id = amax != 0.0f ? kQ8Max / amax : 0.0f;
  const int q = __float2int_rn(v * id);
  qs[b * kBlock + lane] = static_cast<int8_t>(q);
  const int sum = warp_sum(q);
  if (lane == 0) {
    d_out[b] = __half2float(__float2half_rn(d));
    sums[b] = sum;
    if (s_out != nullptr) s_out[b] = __half2float(__float2half_rn(__fmul_rn(d, static_cast<float>(sum))));
  }
}

// One warp per 256 values: lane l holds values 8l .. 8l+7 (32-block l / 4).
__global__ void quantize_q8_k_kernel(const float* __restrict__ x, int64_t n_blocks, int8_t* __restrict__ qs,
                                     float* __restrict__ d_out, int32_t* __restrict__ sums) {
  launch_dependents();
  grid_dependency_wait();
  const int64_t b = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.y;
  if (b >= n_blocks) return;
  const int lane = threadIdx.x;
  const float4* src = reinterpret_cast<const float4*>(x + b * kBlockK + lane * kPerLaneK);
  const float4 lo = src[0], hi = src[1];
  const float v[kPerLaneK] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  // The first value of largest magnitude: compare (|v|, -index).
  float amax = 0.0f, vmax = 0.0f;
  int imax = 0;
#pragma unroll
  for (int j = 0; j < kPerLaneK; ++j) {
    if (fabsf(v[j]) > amax) {
      amax = fabsf(v[j]);
      vmax = v[j];
      imax = lane * kPerLaneK + j;
    }
  }
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) {
    const float a2 = __shfl_xor_sync(kFullMask, amax, o);
    const float v2 = __shfl_xor_sync(kFullMask, vmax, o);
    const int i2 = __shfl_xor_sync(kFullMask, imax, o);
    if (a2 > amax || (a2 == amax && i2 < imax)) {
      amax = a2;
      vmax = v2;
      imax = i2;
    }
  }
  const int64_t first32 = b * (kBlockK / kBlock);
  int8_t* dst = qs + b * kBlockK + lane * kPerLaneK;
  if (amax == 0.0f) {
#pragma unroll
    for (int j = 0; j < kPerLaneK; ++j) dst[j] = 0;
    if (lane < kBlockK / kBlock) {
      d_out[first32 + lane] = 0.0f;
      sums[first32 + lane] = 0;
    }
    return;
  }
  const float iscale = -kQ8Max / vmax;
  const float d = 1.0f / iscale;
  int sum = 0;
#pragma unroll
  for (int j = 0; j < kPerLaneK; ++j) {
    const int q = min(127, __float2int_rn(iscale * v[j]));
    dst[j] = static_cast<int8_t>(q);
    sum += q;
  }
  // Lanes 4c .. 4c+3 hold 32-block c.
  sum += __shfl_xor_sync(kFullMask, sum, 1);
  sum += __shfl_xor_sync(kFullMask, sum, 2);
  if (lane % 4 == 0) {
    d_out[first32 + lane / 4] = d;
    sums[first32 + lane / 4] = sum;
  }
}

}  // namespace

ActFormat act_format_for(TensorType t) {
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::MXFP4:
      return ActFormat::Q8_0;
    case TensorType::Q4_1:
    case TensorType::Q5_1:
      return ActFormat::Q8_1;
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
    case TensorType::IQ1_S:
    case TensorType::IQ1_M:
    case TensorType::IQ2_XXS:
    case TensorType::IQ2_XS:
    case TensorType::IQ2_S:
    case TensorType::IQ3_XXS:
    case TensorType::IQ3_S:
    case TensorType::IQ4_XS:
    case TensorType::TQ1_0:
    case TensorType::TQ2_0:
      return ActFormat::Q8_K;
    default:
      throw InvalidArgument("no GPU activation format for weight type " + tensor_type_name(t));
  }
}

void quantize_act(ActFormat f, const float* x, int64_t m, int64_t k, const QuantAct& out, cudaStream_t s) {
  const int64_t block = f == ActFormat::Q8_K ? kBlockK : kBlock;
  if (k % block != 0) throw InvalidArgument("quantize_act: row length not a multiple of the block");
  const int64_t n_blocks = m * k / block;
  if (n_blocks == 0) return;
  const dim3 threads(kWarp, kWarpsPerBlock);
  const auto grid = static_cast<unsigned>((n_blocks + kWarpsPerBlock - 1) / kWarpsPerBlock);
  if (f == ActFormat::Q8_1 && out.s == nullptr) throw InvalidArgument("quantize_act: Q8_1 needs the s buffer");
  if (f != ActFormat::Q8_K) {
    launch_kernel(quantize_q8_0_kernel, dim3(grid), threads, 0, s, pdl_chain_enabled(), x, n_blocks, out.qs, out.d,
                  out.sums, f == ActFormat::Q8_1 ? out.s : nullptr);
  } else {
    launch_kernel(quantize_q8_k_kernel, dim3(grid), threads, 0, s, pdl_chain_enabled(), x, n_blocks, out.qs, out.d,
                  out.sums);
  }
}

}  // namespace ferrite::cuda
