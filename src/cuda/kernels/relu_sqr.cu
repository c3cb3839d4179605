#include "cuda/kernels/relu_sqr.h"

#include "cuda/kernels/check.h"

namespace ferrite::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void relu_sqr_kernel(float* x, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float r = x[i] > 0.0f ? x[i] : 0.0f;
  x[i] = __fmul_rn(r, r);  // no contraction: the CPU's product
}

__global__ void relu_kernel(float* x, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

}  // namespace

void relu(float* x, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  relu_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, s>>>(x, n);
  FERRITE_CUDA_LAUNCHED();
}

void relu_sqr(float* x, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  relu_sqr_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, s>>>(x, n);
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
