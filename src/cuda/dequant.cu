// Quantized weight matrices (gpu_matrix.h layouts) dequantized to f16 rows
// [n, k] for the cuBLAS prefill product (linear.cpp). Each value is formed in
// f32 as the CPU's reference dequantizers form it (quant/dequant_*.cpp, no
// fused multiply-adds) and rounded to f16 once:
//   Q4_0: d (q - 8)     Q8_0: d q     Q4_K: (d sc) q - (dmin m)     Q6_K: (d sc) (q - 32)
// One thread per 32-element chunk, written as four 16-byte stores.
// The activations of those products are the CPU's 8-bit blocks
// (act_quant.cu) taken back to f16, so that the GPU's prefill sees the
// activation rounding the CPU's (and llama.cpp's) quantized products see.
#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/ops.h"

namespace ferrite::cuda {
namespace {

constexpr int kChunk = 32;           // elements per thread
constexpr int kThreads = 256;
constexpr int kChunksPerK = 8;       // 256 / 32
constexpr int kQ4Bytes = kChunk / 2; // repacked Q4_0 quants per chunk
constexpr int kQ4KBlockBytes = 144;  // d, dmin, scales[12], qs[128]
constexpr int kQ6KBlockBytes = 210;  // ql[128], qh[64], scales[16], d
constexpr int kQ4KScales = 4;        // offset of the packed scales in a Q4_K block
constexpr int kQ4KQuants = 16;       // offset of the quants in a Q4_K block
constexpr int kQ6KQh = 128, kQ6KScales = 192, kQ6KD = 208;

__device__ __forceinline__ float half_at(const uint8_t* p) {
  return __half2float(*reinterpret_cast<const half*>(p));
}

// Q4_K 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes.
__device__ __forceinline__ void q4k_scale_min(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// The 32 values of chunk c (of n_chunks per row) of row `row`.
template <TensorType T>
__device__ __forceinline__ void chunk_values(const GpuMatrix& w, int64_t row, int64_t c, int64_t n_chunks,
                                             float* v) {
  if constexpr (T == TensorType::Q4_0) {
    const uint8_t* q = w.data + (row * n_chunks + c) * kQ4Bytes;
    const float d = __half2float(__ushort_as_half(w.scales[row * n_chunks + c]));
#pragma unroll
    for (int i = 0; i < kQ4Bytes; ++i) {
      v[i] = __fmul_rn(d, static_cast<float>((q[i] & 0xF) - 8));
      v[i + kQ4Bytes] = __fmul_rn(d, static_cast<float>((q[i] >> 4) - 8));
    }
  } else if constexpr (T == TensorType::Q8_0) {
    const auto* q = reinterpret_cast<const int8_t*>(w.data) + (row * n_chunks + c) * kChunk;
    const float d = __half2float(__ushort_as_half(w.scales[row * n_chunks + c]));
#pragma unroll
    for (int i = 0; i < kChunk; ++i) v[i] = __fmul_rn(d, static_cast<float>(q[i]));
  } else if constexpr (T == TensorType::Q4_K) {
    const uint8_t* blk = w.data + row * w.row_bytes + (c / kChunksPerK) * kQ4KBlockBytes;
    const int sub = static_cast<int>(c % kChunksPerK);
    const uint8_t* q = blk + kQ4KQuants + kChunk * (sub / 2);
    int sc, m;
    q4k_scale_min(sub, blk + kQ4KScales, sc, m);
    const float d1 = __fmul_rn(half_at(blk), static_cast<float>(sc));
    const float m1 = __fmul_rn(half_at(blk + 2), static_cast<float>(m));
    const int shift = (sub & 1) ? 4 : 0;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) v[i] = __fsub_rn(__fmul_rn(d1, static_cast<float>((q[i] >> shift) & 0xF)), m1);
  } else if constexpr (T == TensorType::Q6_K) {
    const uint8_t* blk = w.data + row * w.row_bytes + (c / kChunksPerK) * kQ6KBlockBytes;
    const int within = static_cast<int>(c % kChunksPerK);
    const int h = within / 4, qtr = within % 4;
    const uint8_t* ql = blk + 64 * h + (qtr & 1) * 32;
    const uint8_t* qh = blk + kQ6KQh + 32 * h;
    const int shift_l = 4 * (qtr >> 1), shift_h = 2 * qtr;
    const auto* sc = reinterpret_cast<const int8_t*>(blk + kQ6KScales + 8 * h + 2 * qtr);
    const float d = half_at(blk + kQ6KD);
    const float f0 = __fmul_rn(d, static_cast<float>(sc[0])), f1 = __fmul_rn(d, static_cast<float>(sc[1]));
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const int q = (((ql[i] >> shift_l) & 0xF) | (((qh[i] >> shift_h) & 3) << 4)) - 32;
      v[i] = __fmul_rn(i < kChunk / 2 ? f0 : f1, static_cast<float>(q));
    }
  }
}

template <TensorType T>
__global__ void __launch_bounds__(kThreads)
    dequant_kernel(const GpuMatrix w, int64_t n_chunks, int64_t total, uint16_t* __restrict__ out) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (idx >= total) return;
  const int64_t row = idx / n_chunks, c = idx % n_chunks;
  float v[kChunk];
  chunk_values<T>(w, row, c, n_chunks, v);
  uint4* dst = reinterpret_cast<uint4*>(out + idx * kChunk);
#pragma unroll
  for (int s = 0; s < kChunk / 8; ++s) {
    uint4 pack;
    half2* h = reinterpret_cast<half2*>(&pack);
#pragma unroll
    for (int i = 0; i < 4; ++i) h[i] = __floats2half2_rn(v[8 * s + 2 * i], v[8 * s + 2 * i + 1]);
    dst[s] = pack;
  }
}

template <TensorType T>
void launch(const GpuMatrix& w, uint16_t* out, cudaStream_t s) {
  const int64_t n_chunks = w.k / kChunk;
  const int64_t total = w.n * n_chunks;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("dequantize_f16: matrix too large for one launch");
  dequant_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(w, n_chunks, total, out);
  FERRITE_CUDA_LAUNCHED();
}

__global__ void __launch_bounds__(kThreads)
    act_f16_kernel(const int8_t* __restrict__ qs, const float* __restrict__ d, int64_t n, uint16_t* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) out[i] = __half_as_ushort(__float2half_rn(__fmul_rn(d[i / kChunk], static_cast<float>(qs[i]))));
}

}  // namespace

void quantized_act_to_f16(const QuantAct& a, int64_t m, int64_t k, uint16_t* out, cudaStream_t s) {
  const int64_t n = m * k;
  if (n == 0) return;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("quantized_act_to_f16: too many values for one launch");
  act_f16_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(a.qs, a.d, n, out);
  FERRITE_CUDA_LAUNCHED();
}

bool dequant_f16_supports(TensorType t) {
  return t == TensorType::Q4_0 || t == TensorType::Q8_0 || t == TensorType::Q4_K || t == TensorType::Q6_K;
}

void dequantize_f16(const GpuMatrix& w, uint16_t* out, cudaStream_t s) {
  if (w.n == 0) return;
  if (w.k % kChunk != 0) throw InvalidArgument("dequantize_f16: row length not a multiple of 32");
  switch (w.type) {
    case TensorType::Q4_0: launch<TensorType::Q4_0>(w, out, s); break;
    case TensorType::Q8_0: launch<TensorType::Q8_0>(w, out, s); break;
    case TensorType::Q4_K: launch<TensorType::Q4_K>(w, out, s); break;
    case TensorType::Q6_K: launch<TensorType::Q6_K>(w, out, s); break;
    default: throw InvalidArgument("dequantize_f16: unsupported weight type " + tensor_type_name(w.type));
  }
}

}  // namespace ferrite::cuda
