// F16 matrix-vector products for small batches (decode) outside the exact
// mode: y [m, n] = x [m, k] · W^T with f16 W and x, f32 sums in any order.
// One warp per weight row, each lane 8 halves (one 16-byte load) per step,
// a whole warp reading 512 contiguous bytes; up to kCols activation rows
// share each weight load. The exact kernel (matmul_float.cu) keeps the
// CPU's 16-chain order, which leaves only two lanes per row.
// The default kernel (gemv_f16_round_kernel) issues kRound loads per lane
// (128 bytes) before it uses any, without L1 allocation, and reads the
// activations (L1) only after the wait for the previous kernel (pdl.cuh), so
// that its first loads overlap that kernel's tail. Its first version (two
// loads in flight per lane) lives in bench/cuda/legacy_kernels.cu for comparisons.
#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/ops.h"
#include "cuda/kernels/pdl.cuh"

namespace ferrite::cuda {
namespace {

constexpr int kPerLoad = 8;       // halves per 16-byte load
constexpr int kRound = 8;          // 16-byte weight loads in flight per lane
constexpr int kRoundWarps = 8;     // rows per block of the round kernel

__device__ __forceinline__ void unpack8(const int4& raw, float* out) {
  const half2* h = reinterpret_cast<const half2*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

// y rows [col0, col0 + kCols) of one weight row per warp; m - col0 >= kCols.
template <int kCols>
__global__ void __launch_bounds__(kWarp * kRoundWarps)
    gemv_f16_round_kernel(const GpuMatrix w, const half* __restrict__ x, int64_t n_col_chunks,
                          float* __restrict__ y, bool accumulate) {
  const int64_t col_chunk = blockIdx.x % n_col_chunks;
  const int64_t row = (blockIdx.x / n_col_chunks) * kRoundWarps + threadIdx.x / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  const bool active = row < w.n;
  const int64_t col0 = col_chunk * kCols;
  const int64_t n_vec = w.k / kPerLoad;
  const uint8_t* wr = w.data + (active ? row : 0) * w.row_bytes;
  auto load_round = [&](int64_t base, int4 (&raw)[kRound]) {
#pragma unroll
    for (int u = 0; u < kRound; ++u) {
      const int64_t v = base + lane + kWarp * u;
      if (v < n_vec) raw[u] = load_stream(wr + 16 * v);
    }
  };
  int4 raw[kRound];
  if (active) load_round(0, raw);
  grid_dependency_wait();
  if (!active) {
    launch_dependents();
    return;
  }
  float acc[kCols];
#pragma unroll
  for (int t = 0; t < kCols; ++t) acc[t] = 0.0f;
  for (int64_t base = 0;;) {
#pragma unroll
    for (int u = 0; u < kRound; ++u) {
      const int64_t v = base + lane + kWarp * u;
      if (v < n_vec) {
        float wv[kPerLoad];
        unpack8(raw[u], wv);
#pragma unroll
        for (int t = 0; t < kCols; ++t) {
          float xv[kPerLoad];
          unpack8(__ldg(reinterpret_cast<const int4*>(x + (col0 + t) * w.k) + v), xv);
#pragma unroll
          for (int e = 0; e < kPerLoad; ++e) acc[t] = __fmaf_rn(wv[e], xv[e], acc[t]);
        }
      }
    }
    base += kWarp * kRound;
    if (base >= n_vec) break;
    load_round(base, raw);
  }
  launch_dependents();
#pragma unroll
  for (int t = 0; t < kCols; ++t) {
    const float s = warp_sum(acc[t]);
    if (lane == 0) {
      float* out = y + (col0 + t) * w.n + row;
      *out = accumulate ? *out + s : s;
    }
  }
}

template <int kCols>
void launch_round(const GpuMatrix& w, const half* x, int64_t m, float* y, bool accumulate, bool pdl, cudaStream_t s) {
  const int64_t n_col_chunks = m / kCols;
  const int64_t blocks = n_col_chunks * ((w.n + kRoundWarps - 1) / kRoundWarps);
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("gemv_f16: matrix too large for one launch");
  launch_kernel(gemv_f16_round_kernel<kCols>, dim3(static_cast<unsigned>(blocks)), dim3(kWarp * kRoundWarps), 0, s,
                pdl, w, x, n_col_chunks, y, accumulate);
}

}  // namespace

bool gemv_f16_supports(const GpuMatrix& w, const void* x) {
  return w.type == TensorType::F16 && w.k % kPerLoad == 0 && w.row_bytes % 16 == 0 &&
         reinterpret_cast<uintptr_t>(w.data) % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
}

void gemv_f16(const GpuMatrix& w, const void* x, int64_t m, float* y, bool accumulate, bool pdl, cudaStream_t s) {
  if (m <= 0 || w.n == 0) return;
  if (!gemv_f16_supports(w, x)) throw InvalidArgument("gemv_f16: unsupported matrix or alignment");
  const auto* xh = static_cast<const half*>(x);
  // Whole groups of 4 rows, then 2, then 1 (each kernel reads only its own rows of x and y).
  int64_t done = 0;
  if (m - done >= 4) {
    const int64_t rows = (m - done) / 4 * 4;
    launch_round<4>(w, xh + done * w.k, rows, y + done * w.n, accumulate, pdl, s);
    done += rows;
  }
  if (m - done >= 2) {
    launch_round<2>(w, xh + done * w.k, 2, y + done * w.n, accumulate, pdl, s);
    done += 2;
  }
  if (m - done == 1) launch_round<1>(w, xh + done * w.k, 1, y + done * w.n, accumulate, pdl, s);
}

}  // namespace ferrite::cuda
