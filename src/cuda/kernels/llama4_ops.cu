#include "cuda/kernels/llama4_ops.h"

#include "cuda/kernels/check.h"

namespace ferrite::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void temperature_kernel(float* q, const int32_t* pos, int64_t width, float floor_scale, float scale) {
  const int64_t t = blockIdx.x;
  // cpu::attn_temperature in f32, without contractions: the CPU's bits.
  const float p1 = __fadd_rn(static_cast<float>(pos[t]), 1.0f);
  const float f = __fadd_rn(__fmul_rn(logf(__fadd_rn(floorf(__fdiv_rn(p1, floor_scale)), 1.0f)), scale), 1.0f);
  for (int64_t i = threadIdx.x; i < width; i += blockDim.x) q[t * width + i] = __fmul_rn(q[t * width + i], f);
}

__global__ void weight_inputs_kernel(float* in, const int32_t* row, float* w, int64_t n) {
  const int64_t i = blockIdx.x;
  const float wi = w[i];
  float* r = in + static_cast<int64_t>(row[i]) * n;
  for (int64_t d = threadIdx.x; d < n; d += blockDim.x) r[d] = __fmul_rn(r[d], wi);
  __syncthreads();
  if (threadIdx.x == 0) w[i] = 1.0f;
}

}  // namespace

void attn_temperature_scale(float* q, const int32_t* pos, int64_t n, int64_t width, float floor_scale, float scale,
                            cudaStream_t s) {
  if (n <= 0 || width <= 0) return;
  temperature_kernel<<<static_cast<unsigned>(n), kThreads, 0, s>>>(q, pos, width, floor_scale, scale);
  FERRITE_CUDA_LAUNCHED();
}

void moe_weight_inputs(float* in, const int32_t* row, float* w, int64_t slots, int64_t n, cudaStream_t s) {
  if (slots <= 0 || n <= 0) return;
  weight_inputs_kernel<<<static_cast<unsigned>(slots), kThreads, 0, s>>>(in, row, w, n);
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
