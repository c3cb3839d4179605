// The exact mode's dequantized product of the IQ/TQ types (ops.h
// exact_dequantized): which types take it, and the store of its row blocks
// into the output's columns.
#include <cuda_fp16.h>

#include <string>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/iq_tables.h"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

constexpr int kStoreThreads = 256;

__global__ void __launch_bounds__(kStoreThreads)
    store_columns_kernel(const float* __restrict__ src, int64_t m, int64_t cols, float* __restrict__ y, int64_t ldy,
                         bool accumulate) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kStoreThreads + threadIdx.x;
  if (i >= m * cols) return;
  float* out = y + (i / cols) * ldy + i % cols;
  *out = accumulate ? __fadd_rn(*out, src[i]) : src[i];
}

}  // namespace

bool exact_dequantized(TensorType t) { return iq_gpu_type(t); }

void store_columns(const float* src, int64_t m, int64_t cols, float* y, int64_t ldy, bool accumulate,
                   cudaStream_t s) {
  const int64_t n = m * cols;
  if (n == 0) return;
  const int64_t blocks = (n + kStoreThreads - 1) / kStoreThreads;
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("store_columns: too many values for one launch");
  store_columns_kernel<<<static_cast<unsigned>(blocks), kStoreThreads, 0, s>>>(src, m, cols, y, ldy, accumulate);
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
