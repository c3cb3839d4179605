// The last step of a LoRA term on the GPU: y[t] += s_t * u[t], s_t the
// token's user scale through alpha / rank. CPU twin: cpu::lora_scale_add
// (cpu/ops/lora.h), the same float operations in the same order per element.
#include "cuda/kernels/check.h"
#include "cuda/kernels/lora.h"

namespace ferrite::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void lora_scale_add_kernel(float* __restrict__ y, const float* __restrict__ u, int64_t n, int64_t n_out,
                                      const float* __restrict__ user, float alpha, float rank) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n * n_out) return;
  const float us = user[idx / n_out];
  if (us == 0.0f) return;
  const float s = alpha != 0.0f ? __fdiv_rn(__fmul_rn(us, alpha), rank) : us;
  y[idx] = __fadd_rn(y[idx], __fmul_rn(s, u[idx]));  // no fused multiply-add: the CPU's rounding
}

}  // namespace

void lora_scale_add(float* y, const float* u, int64_t n, int64_t n_out, const float* user, float alpha, int64_t rank,
                    cudaStream_t s) {
  if (n * n_out == 0) return;
  const auto blocks = static_cast<unsigned>((n * n_out + kThreads - 1) / kThreads);
  lora_scale_add_kernel<<<blocks, kThreads, 0, s>>>(y, u, n, n_out, user, alpha, static_cast<float>(rank));
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
