// Attention over the f16 KV cache, one block per (token, head), as
// cpu/attention.cpp computes it: q rounded to f16, scores s_j = scale (q·K_j)
// (soft-capped, plus the mask), softmax with the CPU's exp and a double sum,
// probabilities rounded to f16, out = sum_j p_j V_j in f32. The scores of
// all cells live in shared memory (attention_max_kv() bounds n_kv).
#include <algorithm>

#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/device_math.cuh"
#include "cuda/ops.h"

namespace ferrite::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / kWarp;

size_t smem_bytes(int64_t n_kv, int64_t head_dim) {
  return static_cast<size_t>(n_kv + head_dim + std::max<int64_t>(kThreads, head_dim)) * sizeof(float);
}

__global__ void __launch_bounds__(kThreads) attention_kernel(const AttentionParams p) {
  extern __shared__ float smem[];
  __shared__ float scratch_f[kWarp];
  __shared__ double scratch_d[kWarp];
  const int64_t hd = p.head_dim, n_kv = p.n_kv;
  float* scores = smem;            // [n_kv]
  float* q16 = smem + n_kv;        // [hd]
  float* partial = q16 + hd;       // [groups * hd]
  const int64_t h = blockIdx.x, t = blockIdx.y;
  const int64_t g = h / (p.n_head / p.n_head_kv);
  const int64_t kv_stride = p.n_head_kv * hd;
  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
  const float* q = p.q + (t * p.n_head + h) * hd;
  const float* mask = p.mask + t * n_kv;
  float* out = p.out + (t * p.n_head + h) * hd;

  for (int64_t d = tid; d < hd; d += kThreads) q16[d] = __half2float(__float2half_rn(q[d]));
  __syncthreads();

  // Scores: one warp per cell, lanes over the head's dimensions.
  for (int64_t j = warp; j < n_kv; j += kWarps) {
    if (mask[j] == -INFINITY) {
      if (lane == 0) scores[j] = -INFINITY;
      continue;
    }
    const half* kr = reinterpret_cast<const half*>(p.k) + j * kv_stride + g * hd;
    float s = 0.0f;
    for (int64_t d = lane; d < hd; d += kWarp) s = __fmaf_rn(q16[d], __half2float(kr[d]), s);
    s = warp_sum(s) * p.scale;
    if (lane == 0) {
      if (p.softcap > 0.0f) s = tanhf(s * (1.0f / p.softcap)) * p.softcap;
      scores[j] = s + mask[j];
    }
  }
  __syncthreads();

  float max = -INFINITY;
  for (int64_t j = tid; j < n_kv; j += kThreads) max = fmaxf(max, scores[j]);
  max = block_max(max, scratch_f);
  if (max == -INFINITY) {
    for (int64_t d = tid; d < hd; d += kThreads) out[d] = 0.0f;
    return;
  }
  double sum = 0.0;
  for (int64_t j = tid; j < n_kv; j += kThreads) {
    const float e = row_exp(scores[j] - max, j, n_kv);
    scores[j] = e;
    sum += e;
  }
  sum = block_sum(sum, scratch_d);
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = tid; j < n_kv; j += kThreads) scores[j] = __half2float(__float2half_rn(scores[j] * inv));
  __syncthreads();

  // out[d] = sum_j p_j V[j, d]: `groups` thread groups split the cells.
  const int64_t groups = hd < kThreads ? kThreads / hd : 1;
  for (int64_t idx = tid; idx < groups * hd; idx += kThreads) {
    const int64_t grp = idx / hd, d = idx % hd;
    const half* vc = reinterpret_cast<const half*>(p.v) + g * hd + d;
    float acc = 0.0f;
    for (int64_t j = grp; j < n_kv; j += groups) {
      const float pj = scores[j];
      if (pj != 0.0f) acc = __fmaf_rn(pj, __half2float(vc[j * kv_stride]), acc);
    }
    partial[idx] = acc;
  }
  __syncthreads();
  for (int64_t d = tid; d < hd; d += kThreads) {
    float acc = 0.0f;
    for (int64_t grp = 0; grp < groups; ++grp) acc += partial[grp * hd + d];
    out[d] = acc;
  }
}

int max_dynamic_smem() {
  static const int bytes = [] {
    int dev = 0, optin = 0;
    FERRITE_CUDA_CHECK(cudaGetDevice(&dev));
    FERRITE_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    // Leave room for the static scratch.
    const int usable = optin - static_cast<int>(kWarp * (sizeof(float) + sizeof(double)));
    FERRITE_CUDA_CHECK(cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, usable));
    return usable;
  }();
  return bytes;
}

}  // namespace

int64_t attention_max_kv() {
  constexpr int64_t kMaxHeadDim = 256;
  return static_cast<int64_t>(max_dynamic_smem() / sizeof(float)) - kMaxHeadDim - kThreads - kMaxHeadDim;
}

void attention(const AttentionParams& p, cudaStream_t s) {
  if (p.n_tokens == 0 || p.n_head == 0) return;
  const size_t bytes = smem_bytes(p.n_kv, p.head_dim);
  if (bytes > static_cast<size_t>(max_dynamic_smem())) {
    throw InvalidArgument("GPU attention: " + std::to_string(p.n_kv) + " cache cells exceed the limit of " +
                          std::to_string(attention_max_kv()));
  }
  if (p.n_tokens > 65535) throw InvalidArgument("GPU attention: too many tokens in one pass");
  attention_kernel<<<dim3(static_cast<unsigned>(p.n_head), static_cast<unsigned>(p.n_tokens)), kThreads, bytes, s>>>(p);
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
