// Quantized weight matrices (gpu_matrix.h layouts) dequantized to f16 rows
// [n, k] for the cuBLAS prefill product (linear.cpp), or to f32 rows for the
// exact mode's dequantized products. Each value is formed in f32 as the
// CPU's reference dequantizers form it (dequant_chunk.cuh) and, for f16,
// rounded once. One thread per 32-element chunk, written as 16-byte stores.
// The activations of the prefill products are the CPU's 8-bit blocks
// (act_quant.cu) taken back to f16, so that the GPU's prefill sees the
// activation rounding the CPU's (and llama.cpp's) quantized products see.
#include <cuda_fp16.h>

#include <string>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/dequant_chunk.cuh"
#include "cuda/kernels/iq_tables.h"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

using dq::kChunk;
constexpr int kThreads = 256;
constexpr int kHalvesPerStore = 8;   // f16 values per 16-byte store
constexpr int kFloatsPerStore = 4;   // f32 values per 16-byte store

__device__ __forceinline__ void store_chunk(const float* v, uint16_t* out) {
  uint4* dst = reinterpret_cast<uint4*>(out);
#pragma unroll
  for (int s = 0; s < kChunk / kHalvesPerStore; ++s) {
    uint4 pack;
    half2* h = reinterpret_cast<half2*>(&pack);
#pragma unroll
    for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(v[8 * s + 2 * i], v[8 * s + 2 * i + 1]);
    dst[s] = pack;
  }
}

__device__ __forceinline__ void store_chunk(const float* v, float* out) {
  float4* dst = reinterpret_cast<float4*>(out);
#pragma unroll
  for (int s = 0; s < kChunk / kFloatsPerStore; ++s) {
    dst[s] = make_float4(v[4 * s], v[4 * s + 1], v[4 * s + 2], v[4 * s + 3]);
  }
}

template <TensorType T, typename Out>
__global__ void __launch_bounds__(kThreads)
    dequant_kernel(const GpuMatrix w, int64_t n_chunks, int64_t total, Out* __restrict__ out) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (idx >= total) return;
  const int64_t row = idx / n_chunks, c = idx % n_chunks;
  float v[kChunk];
  dq::chunk_values<T>(w, row, c, n_chunks, v);
  store_chunk(v, out + idx * kChunk);
}

template <TensorType T, typename Out>
void launch(const GpuMatrix& w, Out* out, cudaStream_t s) {
  const int64_t n_chunks = w.k / kChunk;
  const int64_t total = w.n * n_chunks;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("dequantize: matrix too large for one launch");
  dequant_kernel<T, Out><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(w, n_chunks, total, out);
  FERRITE_CUDA_LAUNCHED();
}

template <typename Out>
void dequantize(const GpuMatrix& w, Out* out, cudaStream_t s) {
  if (w.n == 0) return;
  if (w.k % kChunk != 0) throw InvalidArgument("dequantize: row length not a multiple of 32");
  switch (w.type) {
    case TensorType::Q4_0: launch<TensorType::Q4_0>(w, out, s); break;
    case TensorType::Q4_1: launch<TensorType::Q4_1>(w, out, s); break;
    case TensorType::Q5_0: launch<TensorType::Q5_0>(w, out, s); break;
    case TensorType::Q5_1: launch<TensorType::Q5_1>(w, out, s); break;
    case TensorType::Q8_0: launch<TensorType::Q8_0>(w, out, s); break;
    case TensorType::Q2_K: launch<TensorType::Q2_K>(w, out, s); break;
    case TensorType::Q3_K: launch<TensorType::Q3_K>(w, out, s); break;
    case TensorType::Q4_K: launch<TensorType::Q4_K>(w, out, s); break;
    case TensorType::Q5_K: launch<TensorType::Q5_K>(w, out, s); break;
    case TensorType::Q6_K: launch<TensorType::Q6_K>(w, out, s); break;
    case TensorType::IQ1_S: launch<TensorType::IQ1_S>(w, out, s); break;
    case TensorType::IQ1_M: launch<TensorType::IQ1_M>(w, out, s); break;
    case TensorType::IQ2_XXS: launch<TensorType::IQ2_XXS>(w, out, s); break;
    case TensorType::IQ2_XS: launch<TensorType::IQ2_XS>(w, out, s); break;
    case TensorType::IQ2_S: launch<TensorType::IQ2_S>(w, out, s); break;
    case TensorType::IQ3_XXS: launch<TensorType::IQ3_XXS>(w, out, s); break;
    case TensorType::IQ3_S: launch<TensorType::IQ3_S>(w, out, s); break;
    case TensorType::IQ4_NL: launch<TensorType::IQ4_NL>(w, out, s); break;
    case TensorType::MXFP4: launch<TensorType::MXFP4>(w, out, s); break;
    case TensorType::IQ4_XS: launch<TensorType::IQ4_XS>(w, out, s); break;
    case TensorType::TQ1_0: launch<TensorType::TQ1_0>(w, out, s); break;
    case TensorType::TQ2_0: launch<TensorType::TQ2_0>(w, out, s); break;
    default: throw InvalidArgument("dequantize: unsupported weight type " + tensor_type_name(w.type));
  }
}

__global__ void __launch_bounds__(kThreads)
    act_f16_kernel(const int8_t* __restrict__ qs, const float* __restrict__ d, int64_t n, uint16_t* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) out[i] = __half_as_ushort(__float2half_rn(__fmul_rn(d[i / kChunk], static_cast<float>(qs[i]))));
}

__global__ void __launch_bounds__(kThreads)
    act_f32_kernel(const int8_t* __restrict__ qs, const float* __restrict__ d, int64_t n, float* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) out[i] = __fmul_rn(d[i / kChunk], static_cast<float>(qs[i]));
}

unsigned act_blocks(int64_t n, const char* who) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 0x7FFFFFFF) throw InvalidArgument(std::string(who) + ": too many values for one launch");
  return static_cast<unsigned>(blocks);
}

}  // namespace

void quantized_act_to_f16(const QuantAct& a, int64_t m, int64_t k, uint16_t* out, cudaStream_t s) {
  const int64_t n = m * k;
  if (n == 0) return;
  act_f16_kernel<<<act_blocks(n, "quantized_act_to_f16"), kThreads, 0, s>>>(a.qs, a.d, n, out);
  FERRITE_CUDA_LAUNCHED();
}

void quantized_act_to_f32(const QuantAct& a, int64_t m, int64_t k, float* out, cudaStream_t s) {
  const int64_t n = m * k;
  if (n == 0) return;
  act_f32_kernel<<<act_blocks(n, "quantized_act_to_f32"), kThreads, 0, s>>>(a.qs, a.d, n, out);
  FERRITE_CUDA_LAUNCHED();
}

bool dequant_f16_supports(TensorType t) {
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return true;
    default:
      return iq_gpu_type(t);
  }
}

void dequantize_f16(const GpuMatrix& w, uint16_t* out, cudaStream_t s) { dequantize(w, out, s); }

void dequantize_f32(const GpuMatrix& w, float* out, cudaStream_t s) { dequantize(w, out, s); }

}  // namespace ferrite::cuda
