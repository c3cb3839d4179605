// Comparison-only kernels: earlier versions of products the engine has
// replaced, kept for ferrite_cuda_bench --products (product_bench.cpp) to
// time the new ones against. Not part of the engine (src/cuda).
//   legacy_gemv_f16: the first F16 decode product (matmul_f16_fast.cu's
//   predecessor): one warp per weight row, two 16-byte loads in flight per
//   lane, up to 8 activation rows per block.
#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/gpu_matrix.h"

namespace ferrite::cuda {
namespace {

constexpr int kRowsPerBlock = 4;  // warps per block, one row each
constexpr int kPerLoad = 8;       // halves per 16-byte load
constexpr int kMaxCols = 8;

__device__ __forceinline__ void unpack8(const int4& raw, float* out) {
  const half2* h = reinterpret_cast<const half2*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

template <int kCols>
__global__ void __launch_bounds__(kWarp * kRowsPerBlock)
    gemv_f16_kernel(const GpuMatrix w, const half* __restrict__ x, int64_t m, int64_t n_col_chunks,
                    float* __restrict__ y, bool accumulate) {
  const int64_t col_chunk = blockIdx.x % n_col_chunks;
  const int64_t row = (blockIdx.x / n_col_chunks) * kRowsPerBlock + threadIdx.y;
  if (row >= w.n) return;
  const int64_t col0 = col_chunk * kCols;
  const int n_cols = static_cast<int>(min(static_cast<int64_t>(kCols), m - col0));
  const int64_t k = w.k;
  const int lane = threadIdx.x;
  const int4* wr = reinterpret_cast<const int4*>(w.data + row * w.row_bytes);
  float acc[kCols];
#pragma unroll
  for (int t = 0; t < kCols; ++t) acc[t] = 0.0f;
#pragma unroll 2
  for (int64_t v = lane; v < k / kPerLoad; v += kWarp) {
    float wv[kPerLoad];
    unpack8(wr[v], wv);
#pragma unroll
    for (int t = 0; t < kCols; ++t) {
      if (t < n_cols) {
        float xv[kPerLoad];
        unpack8(reinterpret_cast<const int4*>(x + (col0 + t) * k)[v], xv);
#pragma unroll
        for (int e = 0; e < kPerLoad; ++e) acc[t] = __fmaf_rn(wv[e], xv[e], acc[t]);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kCols; ++t) {
    const float s = warp_sum(acc[t]);
    if (lane == 0 && t < n_cols) {
      float* out = y + (col0 + t) * w.n + row;
      *out = accumulate ? *out + s : s;
    }
  }
}

template <int kCols>
void launch(const GpuMatrix& w, const half* x, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  const int64_t n_col_chunks = (m + kCols - 1) / kCols;
  const int64_t blocks = n_col_chunks * ((w.n + kRowsPerBlock - 1) / kRowsPerBlock);
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("gemv_f16: matrix too large for one launch");
  gemv_f16_kernel<kCols><<<static_cast<unsigned>(blocks), dim3(kWarp, kRowsPerBlock), 0, s>>>(w, x, m, n_col_chunks,
                                                                                             y, accumulate);
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace

// y [m, w.n] (+)= x [m, k] f16 · W^T for F16 W (k a multiple of 8, 16-byte aligned rows and x).
void legacy_gemv_f16(const GpuMatrix& w, const void* x, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  if (m <= 0 || w.n == 0) return;
  const auto* xh = static_cast<const half*>(x);
  if (m == 1) {
    launch<1>(w, xh, m, y, accumulate, s);
  } else if (m <= 4) {
    launch<4>(w, xh, m, y, accumulate, s);
  } else {
    launch<kMaxCols>(w, xh, m, y, accumulate, s);
  }
}

}  // namespace ferrite::cuda
