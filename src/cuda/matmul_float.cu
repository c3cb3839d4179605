// Float matrix products y [m, n] = x [m, k] · W^T for F16 weights (the
// activations rounded to f16, as the CPU's dot_f16 takes them) and F32
// weights, f32 products summed in f32: one warp per weight row, lanes over
// 8-element groups (16-byte loads of f16 rows when k % 8 == 0), up to kCols
// activation rows per pass.
#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/device_math.cuh"
#include "cuda/ops.h"

namespace ferrite::cuda {
namespace {

constexpr int kRowsPerBlock = 4;
constexpr int kGroup = 8;

template <bool kF16, int kCols>
__global__ void __launch_bounds__(kWarp * kRowsPerBlock)
    matmul_float_kernel(const GpuMatrix w, const void* __restrict__ xv, int64_t m, int64_t n_col_chunks,
                        float* __restrict__ y, bool accumulate) {
  const int64_t col_chunk = blockIdx.x % n_col_chunks;
  const int64_t row = (blockIdx.x / n_col_chunks) * kRowsPerBlock + threadIdx.y;
  if (row >= w.n) return;
  const int64_t col0 = col_chunk * kCols;
  const int n_cols = static_cast<int>(min(static_cast<int64_t>(kCols), m - col0));
  const int lane = threadIdx.x;
  const int64_t k = w.k;
  float acc[kCols];
#pragma unroll
  for (int t = 0; t < kCols; ++t) acc[t] = 0.0f;
  if constexpr (kF16) {
    const half* wr = reinterpret_cast<const half*>(w.data + row * w.row_bytes);
    const half* x = static_cast<const half*>(xv);
    if (k % kGroup == 0) {
      for (int64_t g = lane; g < k / kGroup; g += kWarp) {
        const int4 wv = reinterpret_cast<const int4*>(wr)[g];
        const half2* wh = reinterpret_cast<const half2*>(&wv);
#pragma unroll
        for (int t = 0; t < kCols; ++t) {
          if (t < n_cols) {
            const int4 xv4 = reinterpret_cast<const int4*>(x + (col0 + t) * k)[g];
            const half2* xh = reinterpret_cast<const half2*>(&xv4);
#pragma unroll
            for (int i = 0; i < kGroup / 2; ++i) {
              const float2 a = __half22float2(wh[i]), b = __half22float2(xh[i]);
              acc[t] = __fmaf_rn(a.x, b.x, acc[t]);
              acc[t] = __fmaf_rn(a.y, b.y, acc[t]);
            }
          }
        }
      }
    } else {
      for (int64_t e = lane; e < k; e += kWarp) {
        const float a = __half2float(wr[e]);
#pragma unroll
        for (int t = 0; t < kCols; ++t) {
          if (t < n_cols) acc[t] = __fmaf_rn(a, __half2float(x[(col0 + t) * k + e]), acc[t]);
        }
      }
    }
  } else {
    const float* wr = reinterpret_cast<const float*>(w.data + row * w.row_bytes);
    const float* x = static_cast<const float*>(xv);
    for (int64_t e = lane; e < k; e += kWarp) {
      const float a = wr[e];
#pragma unroll
      for (int t = 0; t < kCols; ++t) {
        if (t < n_cols) acc[t] = __fmaf_rn(a, x[(col0 + t) * k + e], acc[t]);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kCols; ++t) {
    const float v = warp_sum(acc[t]);
    if (lane == 0 && t < n_cols) {
      float* out = y + (col0 + t) * w.n + row;
      *out = accumulate ? *out + v : v;
    }
  }
}

template <bool kF16, int kCols>
void launch(const GpuMatrix& w, const void* x, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  const int64_t n_col_chunks = (m + kCols - 1) / kCols;
  const int64_t blocks = n_col_chunks * ((w.n + kRowsPerBlock - 1) / kRowsPerBlock);
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("matmul_float: matrix too large for one launch");
  matmul_float_kernel<kF16, kCols><<<static_cast<unsigned>(blocks), dim3(kWarp, kRowsPerBlock), 0, s>>>(
      w, x, m, n_col_chunks, y, accumulate);
  FERRITE_CUDA_LAUNCHED();
}

template <bool kF16>
void launch_cols(const GpuMatrix& w, const void* x, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  if (m == 1) {
    launch<kF16, 1>(w, x, m, y, accumulate, s);
  } else if (m <= 4) {
    launch<kF16, 4>(w, x, m, y, accumulate, s);
  } else {
    launch<kF16, 8>(w, x, m, y, accumulate, s);
  }
}

}  // namespace

void matmul_float(const GpuMatrix& w, const void* x, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  if (m <= 0 || w.n == 0) return;
  if (w.type == TensorType::F16) {
    launch_cols<true>(w, x, m, y, accumulate, s);
  } else if (w.type == TensorType::F32) {
    launch_cols<false>(w, x, m, y, accumulate, s);
  } else {
    throw InvalidArgument("matmul_float: unsupported weight type " + tensor_type_name(w.type));
  }
}

}  // namespace ferrite::cuda
