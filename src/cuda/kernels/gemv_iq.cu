// Quantized matrix-vector products for the IQ and TQ weight types outside
// the exact mode (1..kGemmMinRows activation rows, in groups of
// kGemvMaxRows): y [m, n] (+)= x [m, k] · W^T on the 8-bit activation blocks
// (act_quant.cu: Q8_0 for IQ4_NL and MXFP4, Q8_K otherwise). One warp per weight row,
// a lane per 32-element chunk (dequant_iq.cuh decodes it into int8 values
// into int8 words and per-8 scales: the grid types' signs applied 4 bytes at
// a time, the IQ4 table looked up with byte_perm, TQ2_0 4 values at a time,
// TQ1_0 value by value), dp4a against the activations per 8 elements:
//   d_a sum_g sc_g (sum_j q_j a_j [+ delta_g sum_j a_j  (IQ1)])
// f32 terms summed in any order. The weights are read in 1- and 2-byte loads
// (GGUF blocks are only 2-byte aligned; MXFP4's 17-byte blocks in bytes) and the activations straight from
// global memory: correct first, not yet tuned for bandwidth.
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/dequant_iq.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/iq_tables.h"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

using iqd::kChunk;
using iqd::kGroup;
using iqd::kGroups;
constexpr int kWarps = 8;  // weight rows per block
constexpr int kThreads = kWarps * kWarp;
constexpr int kOnes = 0x01010101;  // dp4a with this sums four int8 values

__device__ __forceinline__ int pack4(const int8_t* q) {
  return static_cast<int>((static_cast<uint32_t>(static_cast<uint8_t>(q[0]))) |
                          (static_cast<uint32_t>(static_cast<uint8_t>(q[1])) << 8) |
                          (static_cast<uint32_t>(static_cast<uint8_t>(q[2])) << 16) |
                          (static_cast<uint32_t>(static_cast<uint8_t>(q[3])) << 24));
}

// a: the activations of M rows (qs [M, k], d [M, k / 32]).
template <TensorType T, int M>
__global__ void __launch_bounds__(kThreads)
    gemv_iq_kernel(const GpuMatrix w, const int8_t* __restrict__ aq, const float* __restrict__ ad, float* y,
                   bool accumulate) {
  const int warp = static_cast<int>(threadIdx.x) / kWarp, lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (row >= w.n) return;  // whole warps leave
  const int64_t n_chunks = w.k / kChunk;
  float acc[M];
#pragma unroll
  for (int t = 0; t < M; ++t) acc[t] = 0.0f;
  for (int64_t c = lane; c < n_chunks; c += kWarp) {
    iqd::Words ch;
    int(&wq)[kChunk / 4] = ch.w;
    if constexpr (iqd::kPacked<T>) {
      const float scale = iqd::decode_packed<T>(w, row, c, wq);
#pragma unroll
      for (int g = 0; g < kGroups; ++g) ch.sc[g] = scale;
    } else if constexpr (T == TensorType::TQ1_0) {
      iqd::Chunk e;
      iqd::decode<T>(w, row, c, e);
#pragma unroll
      for (int i = 0; i < kChunk / 4; ++i) wq[i] = pack4(e.q + 4 * i);
#pragma unroll
      for (int g = 0; g < kGroups; ++g) ch.sc[g] = e.sc[g];
    } else {
      iqd::decode<T>(w, row, c, ch);  // the grid types, straight into words
    }
#pragma unroll
    for (int t = 0; t < M; ++t) {
      const int4* au = reinterpret_cast<const int4*>(aq + t * w.k + c * kChunk);
      const int4 a0 = au[0], a1 = au[1];
      const int aw[kChunk / 4] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      float sum = 0.0f;
#pragma unroll
      for (int g = 0; g < kGroups; ++g) {
        const int is = __dp4a(wq[2 * g + 1], aw[2 * g + 1], __dp4a(wq[2 * g], aw[2 * g], 0));
        float term = static_cast<float>(is);
        if constexpr (iqd::kWithDelta<T>) {
          const int as = __dp4a(kOnes, aw[2 * g + 1], __dp4a(kOnes, aw[2 * g], 0));
          term += ch.delta[g] * static_cast<float>(as);
        }
        sum += ch.sc[g] * term;
      }
      acc[t] += ad[t * n_chunks + c] * sum;
    }
  }
#pragma unroll
  for (int t = 0; t < M; ++t) {
    const float v = warp_sum(acc[t]);
    if (lane == 0) {
      float* out = y + t * w.n + row;
      *out = accumulate ? *out + v : v;
    }
  }
}

template <TensorType T, int M>
void launch(const GpuMatrix& w, const int8_t* aq, const float* ad, float* y, bool accumulate, cudaStream_t s) {
  const int64_t blocks = (w.n + kWarps - 1) / kWarps;
  gemv_iq_kernel<T, M><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(w, aq, ad, y, accumulate);
  FERRITE_CUDA_LAUNCHED();
}

template <TensorType T>
void launch_rows(const GpuMatrix& w, const int8_t* aq, const float* ad, int64_t m, float* y, bool accumulate,
                 cudaStream_t s) {
  switch (m) {
    case 1: launch<T, 1>(w, aq, ad, y, accumulate, s); break;
    case 2: launch<T, 2>(w, aq, ad, y, accumulate, s); break;
    case 3: launch<T, 3>(w, aq, ad, y, accumulate, s); break;
    default: launch<T, 4>(w, aq, ad, y, accumulate, s); break;
  }
}

void launch_group(const GpuMatrix& w, const int8_t* aq, const float* ad, int64_t m, float* y, bool accumulate,
                  cudaStream_t s) {
  switch (w.type) {
    case TensorType::IQ1_S: launch_rows<TensorType::IQ1_S>(w, aq, ad, m, y, accumulate, s); break;
    case TensorType::IQ1_M: launch_rows<TensorType::IQ1_M>(w, aq, ad, m, y, accumulate, s); break;
    case TensorType::IQ2_XXS: launch_rows<TensorType::IQ2_XXS>(w, aq, ad, m, y, accumulate, s); break;
    case TensorType::IQ2_XS: launch_rows<TensorType::IQ2_XS>(w, aq, ad, m, y, accumulate, s); break;
    case TensorType::IQ2_S: launch_rows<TensorType::IQ2_S>(w, aq, ad, m, y, accumulate, s); break;
    case TensorType::IQ3_XXS: launch_rows<TensorType::IQ3_XXS>(w, aq, ad, m, y, accumulate, s); break;
    case TensorType::IQ3_S: launch_rows<TensorType::IQ3_S>(w, aq, ad, m, y, accumulate, s); break;
    case TensorType::IQ4_NL: launch_rows<TensorType::IQ4_NL>(w, aq, ad, m, y, accumulate, s); break;
    case TensorType::MXFP4: launch_rows<TensorType::MXFP4>(w, aq, ad, m, y, accumulate, s); break;
    case TensorType::IQ4_XS: launch_rows<TensorType::IQ4_XS>(w, aq, ad, m, y, accumulate, s); break;
    case TensorType::TQ1_0: launch_rows<TensorType::TQ1_0>(w, aq, ad, m, y, accumulate, s); break;
    default: launch_rows<TensorType::TQ2_0>(w, aq, ad, m, y, accumulate, s); break;
  }
}

}  // namespace

bool gemv_iq_supports(const GpuMatrix& w) {
  if (!iq_gpu_type(w.type) || w.k <= 0) return false;
  const bool bytewise = w.type == TensorType::MXFP4;  // read in single bytes: any alignment
  const int64_t block = w.type == TensorType::IQ4_NL || bytewise ? kChunk : iqd::kSb;
  const bool needs_table = w.type != TensorType::TQ1_0 && w.type != TensorType::TQ2_0;
  const bool aligned = bytewise || (reinterpret_cast<uintptr_t>(w.data) % 2 == 0 && w.row_bytes % 2 == 0);
  return w.k % block == 0 && aligned && (!needs_table || w.grid != nullptr);
}

void gemv_iq(const GpuMatrix& w, const QuantAct& a, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  if (m <= 0 || w.n == 0) return;
  if (!gemv_iq_supports(w)) {
    throw InvalidArgument("gemv_iq: unsupported " + tensor_type_name(w.type) + " matrix of row length " +
                          std::to_string(w.k));
  }
  if ((w.n + kWarps - 1) / kWarps > 0x7FFFFFFF) throw InvalidArgument("gemv_iq: matrix too large for one launch");
  const int64_t per_row = w.k / kChunk;  // activation scales per row
  for (int64_t r0 = 0; r0 < m; r0 += kGemvMaxRows) {
    const int64_t rows = std::min(kGemvMaxRows, m - r0);
    launch_group(w, a.qs + r0 * w.k, a.d + r0 * per_row, rows, y + r0 * w.n, accumulate, s);
  }
}

}  // namespace ferrite::cuda
