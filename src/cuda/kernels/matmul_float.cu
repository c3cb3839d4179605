// Float matrix products y [m, n] = x [m, k] · W^T for F16 weights (the
// activations rounded to f16, as the CPU's matrix product takes them) and F32
// weights, summed in the CPU's order (cuda/cpu_order.cuh) so that float
// models give the CPU's bits:
//   k % 16 == 0: 16 chains per output; a group of 16 / E lanes holds them, E
//   per lane (E = 8 halves or 4 floats: one 16-byte load per lane and step),
//   up to kCols activation rows per pass;
//   other k (or unaligned rows): one thread per output, the serial order.
#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/cpu_order.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kSerialThreads = 128;
constexpr int kLoadBytes = 16;

template <bool kF16>
struct Elem {
  using T = float;
  static constexpr int kPerLoad = kLoadBytes / sizeof(float);
};
template <>
struct Elem<true> {
  using T = half;
  static constexpr int kPerLoad = kLoadBytes / sizeof(half);
};

template <bool kF16>
__device__ __forceinline__ void load_vec(const void* p, float* out) {
  const int4 raw = *static_cast<const int4*>(p);
  if constexpr (kF16) {
    const half2* h = reinterpret_cast<const half2*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __half22float2(h[i]);
      out[2 * i] = f.x;
      out[2 * i + 1] = f.y;
    }
  } else {
    const float* f = reinterpret_cast<const float*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = f[i];
  }
}

template <bool kF16, int kCols>
__global__ void __launch_bounds__(kThreads)
    matmul_tiled_kernel(const GpuMatrix w, const void* __restrict__ xv, int64_t m, int64_t n_col_chunks,
                        float* __restrict__ y, bool accumulate) {
  using T = typename Elem<kF16>::T;
  constexpr int E = Elem<kF16>::kPerLoad;       // chains per lane
  constexpr int G = kOrderLanes / E;            // lanes per output row
  constexpr int kRowsPerBlock = kThreads / G;
  const int64_t col_chunk = blockIdx.x % n_col_chunks;
  const int64_t row_raw = (blockIdx.x / n_col_chunks) * kRowsPerBlock + threadIdx.x / G;
  const bool valid = row_raw < w.n;
  const int64_t row = valid ? row_raw : w.n - 1;  // out-of-range lanes still take part in the shuffles
  const int u = threadIdx.x % G;
  const int64_t col0 = col_chunk * kCols;
  const int n_cols = static_cast<int>(min(static_cast<int64_t>(kCols), m - col0));
  const int64_t k = w.k;
  const T* wr = reinterpret_cast<const T*>(w.data + row * w.row_bytes);
  const T* x = static_cast<const T*>(xv) + col0 * k;
  float c[kCols][E];
#pragma unroll
  for (int t = 0; t < kCols; ++t) {
#pragma unroll
    for (int e = 0; e < E; ++e) c[t][e] = 0.0f;
  }
  for (int64_t i = u * E; i < k; i += kOrderLanes) {
    float wv[E];
    load_vec<kF16>(wr + i, wv);
#pragma unroll
    for (int t = 0; t < kCols; ++t) {
      if (t < n_cols) {
        float xv4[E];
        load_vec<kF16>(x + t * k + i, xv4);
#pragma unroll
        for (int e = 0; e < E; ++e) c[t][e] = __fmaf_rn(wv[e], xv4[e], c[t][e]);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kCols; ++t) {
    const float v = tree16_spread<E>(c[t]);
    if (valid && u == 0 && t < n_cols) {
      float* out = y + (col0 + t) * w.n + row;
      *out = accumulate ? *out + v : v;
    }
  }
}

template <bool kF16>
__global__ void __launch_bounds__(kSerialThreads)
    matmul_serial_kernel(const GpuMatrix w, const void* __restrict__ xv, int64_t m, float* __restrict__ y,
                         bool accumulate) {
  using T = typename Elem<kF16>::T;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= m * w.n) return;
  const int64_t t = idx / w.n, row = idx % w.n;
  const T* wr = reinterpret_cast<const T*>(w.data + row * w.row_bytes);
  const T* x = static_cast<const T*>(xv) + t * w.k;
  const float v = dot_cpu_order_serial<kF16>(wr, x, w.k);
  y[idx] = accumulate ? y[idx] + v : v;
}

template <bool kF16, int kCols>
void launch_tiled(const GpuMatrix& w, const void* x, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  constexpr int kRowsPerBlock = kThreads / (kOrderLanes / Elem<kF16>::kPerLoad);
  const int64_t n_col_chunks = (m + kCols - 1) / kCols;
  const int64_t blocks = n_col_chunks * ((w.n + kRowsPerBlock - 1) / kRowsPerBlock);
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("matmul_float: matrix too large for one launch");
  matmul_tiled_kernel<kF16, kCols><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(w, x, m, n_col_chunks, y,
                                                                                     accumulate);
  FERRITE_CUDA_LAUNCHED();
}

template <bool kF16>
void launch(const GpuMatrix& w, const void* x, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  const bool aligned = reinterpret_cast<uintptr_t>(x) % kLoadBytes == 0 &&
                       reinterpret_cast<uintptr_t>(w.data) % kLoadBytes == 0 && w.row_bytes % kLoadBytes == 0;
  if (w.k % kOrderLanes != 0 || !aligned) {
    const int64_t blocks = (m * w.n + kSerialThreads - 1) / kSerialThreads;
    if (blocks > 0x7FFFFFFF) throw InvalidArgument("matmul_float: matrix too large for one launch");
    matmul_serial_kernel<kF16><<<static_cast<unsigned>(blocks), kSerialThreads, 0, s>>>(w, x, m, y, accumulate);
    FERRITE_CUDA_LAUNCHED();
  } else if (m == 1) {
    launch_tiled<kF16, 1>(w, x, m, y, accumulate, s);
  } else if (m <= 4) {
    launch_tiled<kF16, 4>(w, x, m, y, accumulate, s);
  } else {
    launch_tiled<kF16, 8>(w, x, m, y, accumulate, s);
  }
}

}  // namespace

void matmul_float(const GpuMatrix& w, const void* x, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  if (m <= 0 || w.n == 0) return;
  if (w.type == TensorType::F16) {
    launch<true>(w, x, m, y, accumulate, s);
  } else if (w.type == TensorType::F32) {
    launch<false>(w, x, m, y, accumulate, s);
  } else {
    throw InvalidArgument("matmul_float: unsupported weight type " + tensor_type_name(w.type));
  }
}

}  // namespace ferrite::cuda
