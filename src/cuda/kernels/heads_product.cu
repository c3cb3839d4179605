// The per-head product (heads_product.h; CPU twin cpu/attention/heads_product.cpp).
#include <cuda_fp16.h>

#include <string>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/heads_product.h"

namespace ferrite::cuda {
namespace {

constexpr int kWarps = 8;  // output values per block

// grid: (ceil(n_out / kWarps), n * n_head); one warp per j.
template <bool kF16>
__global__ void heads_product_kernel(cpu::HeadsProduct p) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / kWarp;
  const int64_t th = blockIdx.y;
  if (j >= p.n_out) return;  // the whole warp
  const int64_t t = th / p.n_head, h = th % p.n_head;
  const float* x = p.in + t * p.in_row + h * p.in_head;
  const int64_t row = (h * p.n_out + j) * p.n_in;
  float acc = 0.0f;
  for (int64_t i = lane; i < p.n_in; i += kWarp) {
    if constexpr (kF16) {
      acc += x[i] * __half2float(static_cast<const half*>(p.w)[row + i]);
    } else {
      acc += x[i] * static_cast<const float*>(p.w)[row + i];
    }
  }
  acc = warp_sum(acc);
  if (lane == 0) p.out[t * p.out_row + h * p.out_head + j] = acc;
}

}  // namespace

void heads_product(const cpu::HeadsProduct& p, cudaStream_t s) {
  if (p.w_type != TensorType::F32 && p.w_type != TensorType::F16) {
    throw InvalidArgument("heads_product: " + tensor_type_name(p.w_type) + " weights (F32 or F16 only)");
  }
  if (p.n <= 0 || p.n_head <= 0 || p.n_out <= 0) return;
  const dim3 grid(static_cast<unsigned>((p.n_out + kWarps - 1) / kWarps), static_cast<unsigned>(p.n * p.n_head));
  if (p.w_type == TensorType::F16) {
    heads_product_kernel<true><<<grid, kWarps * kWarp, 0, s>>>(p);
  } else {
    heads_product_kernel<false><<<grid, kWarps * kWarp, 0, s>>>(p);
  }
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
