// Row and element-wise kernels of the decoder: RMSNorm, RoPE, SwiGLU, bias
// and residual adds, f16 conversion, embedding rows, row gathers, KV writes.
// Arithmetic follows the CPU kernels (cpu/ops/norm.cpp: f32 squares summed in
// double; cpu/vec_ops: RoPE with fused multiply-adds, SiLU with fast_exp).
#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/dequant_chunk.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/ops.h"
#include "cuda/kernels/pdl.cuh"

namespace ferrite::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kQ4KBlockBytes = 144;
constexpr int kQ6KBlockBytes = 210;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

// One block of kNormThreads per row. Decode normalizes one row, so the whole
// norm runs on one SM: enough threads that each issues only a few loads (the
// weight vector usually comes from HBM, each dependent load ~1 us), all issued
// before their sums. The sum is in double: its order changes nothing visible
// after the rounding to float.
constexpr int kNormThreads = 1024;
constexpr int kNormUnroll = 4;

__global__ void rms_norm_kernel(const float* __restrict__ x, const float* __restrict__ w, float eps, int64_t n,
                                float* __restrict__ y) {
  __shared__ double scratch[kWarp];
  const float* xr = x + blockIdx.x * n;
  float* yr = y + blockIdx.x * n;
  double sum = 0.0;
#pragma unroll kNormUnroll
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += static_cast<double>(xr[i] * xr[i]);
  sum = block_sum(sum, scratch);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / sqrtf(mean + eps);
#pragma unroll kNormUnroll
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = w != nullptr ? (xr[i] * scale) * w[i] : xr[i] * scale;
}

// One thread per rotated pair.
__global__ void rope_kernel(float* __restrict__ x, const float* __restrict__ cos_t, const float* __restrict__ sin_t,
                            int64_t n_tokens, int64_t n_heads, int64_t head_dim, int half, bool neox) {
  launch_dependents();
  grid_dependency_wait();  // launched with pdl (pdl.cuh)
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n_tokens * n_heads * half) return;
  const int i = static_cast<int>(idx % half);
  const int64_t th = idx / half;  // token * n_heads + head
  const int64_t t = th / n_heads;
  float* v = x + th * head_dim;
  float* a = neox ? v + i : v + 2 * i;
  float* b = neox ? v + i + half : v + 2 * i + 1;
  const float c = cos_t[t * half + i], s = sin_t[t * half + i];
  const float x0 = *a, x1 = *b;
  *a = __fmaf_rn(x0, c, -(x1 * s));
  *b = __fmaf_rn(x0, s, x1 * c);
}

__global__ void swiglu_kernel(const float* __restrict__ gate, const float* up, int64_t rows, int64_t n, float* y) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * n) return;
  const float g = gate[idx];
  const float silu = g / (1.0f + row_exp(-g, idx % n, n));
  y[idx] = silu * up[idx];
}

__global__ void add_bias_kernel(float* y, const float* __restrict__ b, int64_t rows, int64_t n) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < rows * n) y[idx] += b[idx % n];
}

__global__ void add_kernel(float* x, const float* __restrict__ y, int64_t n) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) x[idx] += y[idx];
}

__global__ void to_f16_kernel(const float* __restrict__ x, uint16_t* __restrict__ y, int64_t n) {
  launch_dependents();     // a product launched next may load its weights meanwhile
  grid_dependency_wait();  // launched with pdl (pdl.cuh)
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) y[idx] = __half_as_ushort(__float2half_rn(x[idx]));
}

// One token: rope_kernel over the heads of q|k, and store_kv_kernel of the
// rotated k and of v into cache row `slot`, in one launch. Threads
// [0, n_rot_pairs) rotate pairs (those of k heads also store both values),
// then [.., + n_pass) store k's unrotated dimensions, then [.., + n_embd_kv)
// store v.
__global__ void rope_store_kv_kernel(float* __restrict__ qk, const float* __restrict__ v,
                                     const float* __restrict__ cos_t, const float* __restrict__ sin_t, int64_t n_head,
                                     int64_t n_head_kv, int64_t head_dim, int half, bool neox,
                                     const int32_t* __restrict__ slots, uint16_t* __restrict__ k_cache,
                                     uint16_t* __restrict__ v_cache) {
  launch_dependents();
  grid_dependency_wait();  // launched with pdl (pdl.cuh)
  const int64_t n_embd_kv = n_head_kv * head_dim;
  const int64_t n_pairs = (n_head + n_head_kv) * half;
  const int64_t pass = head_dim - 2 * half;  // unrotated dimensions per head
  const int64_t n_pass = n_head_kv * pass;
  int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  uint16_t* k_row = k_cache + static_cast<int64_t>(slots[0]) * n_embd_kv;
  if (idx < n_pairs) {
    const int i = static_cast<int>(idx % half);
    const int64_t head = idx / half;
    float* hv = qk + head * head_dim;
    const int64_t ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
    const float c = cos_t[i], s = sin_t[i];
    const float x0 = hv[ia], x1 = hv[ib];
    const float ra = __fmaf_rn(x0, c, -(x1 * s)), rb = __fmaf_rn(x0, s, x1 * c);
    hv[ia] = ra;
    hv[ib] = rb;
    if (head >= n_head) {
      uint16_t* kh = k_row + (head - n_head) * head_dim;
      kh[ia] = __half_as_ushort(__float2half_rn(ra));
      kh[ib] = __half_as_ushort(__float2half_rn(rb));
    }
    return;
  }
  idx -= n_pairs;
  if (idx < n_pass) {
    const int64_t head = idx / pass, d = 2 * half + idx % pass;
    k_row[head * head_dim + d] = __half_as_ushort(__float2half_rn(qk[(n_head + head) * head_dim + d]));
    return;
  }
  idx -= n_pass;
  if (idx < n_embd_kv) {
    v_cache[static_cast<int64_t>(slots[0]) * n_embd_kv + idx] = __half_as_ushort(__float2half_rn(v[idx]));
  }
}

// Element e of row r of a GPU matrix, dequantized as quant/dequant_*.cpp do.
__device__ float element(const GpuMatrix& m, int64_t r, int64_t e) {
  switch (m.type) {
    case TensorType::F32:
      return reinterpret_cast<const float*>(m.data + r * m.row_bytes)[e];
    case TensorType::F16:
      return __half2float(reinterpret_cast<const half*>(m.data + r * m.row_bytes)[e]);
    case TensorType::Q4_0: {
      const int64_t b = r * (m.k / 32) + e / 32;
      const int j = static_cast<int>(e % 32);
      const uint8_t byte = m.data[b * 16 + j % 16];
      const int q = j < 16 ? (byte & 0xF) : (byte >> 4);
      return __half2float(__ushort_as_half(m.scales[b])) * static_cast<float>(q - 8);
    }
    case TensorType::Q8_0: {
      const int64_t b = r * (m.k / 32) + e / 32;
      const auto q = static_cast<int8_t>(m.data[b * 32 + e % 32]);
      return __half2float(__ushort_as_half(m.scales[b])) * static_cast<float>(q);
    }
    case TensorType::Q4_K: {
      const uint8_t* blk = m.data + r * m.row_bytes + (e / 256) * kQ4KBlockBytes;
      const int i = static_cast<int>(e % 256);
      const int chunk = i / 64, within = i % 64, sub = 2 * chunk + (within >= 32 ? 1 : 0);
      const uint8_t byte = blk[16 + 32 * chunk + within % 32];
      const int q = within < 32 ? (byte & 0xF) : (byte >> 4);
      const uint8_t* sc = blk + 4;
      int s, mn;
      if (sub < 4) {
        s = sc[sub] & 63;
        mn = sc[sub + 4] & 63;
      } else {
        s = (sc[sub + 4] & 0xF) | ((sc[sub - 4] >> 6) << 4);
        mn = (sc[sub + 4] >> 4) | ((sc[sub] >> 6) << 4);
      }
      const float d = __half2float(*reinterpret_cast<const half*>(blk));
      const float dmin = __half2float(*reinterpret_cast<const half*>(blk + 2));
      return d * static_cast<float>(s) * static_cast<float>(q) - dmin * static_cast<float>(mn);
    }
    case TensorType::Q6_K: {
      const uint8_t* blk = m.data + r * m.row_bytes + (e / 256) * kQ6KBlockBytes;
      const int i = static_cast<int>(e % 256);
      const int h = i / 128, rr = i % 128, qtr = rr / 32, l = rr % 32;
      const uint8_t lb = blk[64 * h + l + (qtr & 1) * 32];
      const int lo = (qtr >> 1) ? (lb >> 4) : (lb & 0xF);
      const int hi = (blk[128 + 32 * h + l] >> (2 * qtr)) & 3;
      const auto sc = static_cast<int8_t>(blk[192 + 8 * h + l / 16 + 2 * qtr]);
      const float d = __half2float(*reinterpret_cast<const half*>(blk + 208));
      return d * static_cast<float>(sc) * static_cast<float>((lo | (hi << 4)) - 32);
    }
    case TensorType::Q4_1: return dq::element_of<TensorType::Q4_1>(m, r, e);
    case TensorType::Q5_0: return dq::element_of<TensorType::Q5_0>(m, r, e);
    case TensorType::Q5_1: return dq::element_of<TensorType::Q5_1>(m, r, e);
    case TensorType::Q2_K: return dq::element_of<TensorType::Q2_K>(m, r, e);
    case TensorType::Q3_K: return dq::element_of<TensorType::Q3_K>(m, r, e);
    case TensorType::Q5_K: return dq::element_of<TensorType::Q5_K>(m, r, e);
    case TensorType::IQ1_S: return dq::element_of<TensorType::IQ1_S>(m, r, e);
    case TensorType::IQ1_M: return dq::element_of<TensorType::IQ1_M>(m, r, e);
    case TensorType::IQ2_XXS: return dq::element_of<TensorType::IQ2_XXS>(m, r, e);
    case TensorType::IQ2_XS: return dq::element_of<TensorType::IQ2_XS>(m, r, e);
    case TensorType::IQ2_S: return dq::element_of<TensorType::IQ2_S>(m, r, e);
    case TensorType::IQ3_XXS: return dq::element_of<TensorType::IQ3_XXS>(m, r, e);
    case TensorType::IQ3_S: return dq::element_of<TensorType::IQ3_S>(m, r, e);
    case TensorType::IQ4_NL: return dq::element_of<TensorType::IQ4_NL>(m, r, e);
    case TensorType::MXFP4: return dq::element_of<TensorType::MXFP4>(m, r, e);
    case TensorType::IQ4_XS: return dq::element_of<TensorType::IQ4_XS>(m, r, e);
    case TensorType::TQ1_0: return dq::element_of<TensorType::TQ1_0>(m, r, e);
    case TensorType::TQ2_0: return dq::element_of<TensorType::TQ2_0>(m, r, e);
    default:
      return 0.0f;  // upload_matrix makes no matrix of another type
  }
}

__global__ void get_rows_kernel(const GpuMatrix m, const int32_t* __restrict__ ids, int64_t n_ids,
                                float* __restrict__ x) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n_ids * m.k) return;
  x[idx] = element(m, ids[idx / m.k], idx % m.k);
}

__global__ void gather_rows_kernel(const float* __restrict__ src, const int32_t* __restrict__ idx_in, int64_t n,
                                   int64_t cols, float* __restrict__ dst) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n * cols) dst[idx] = src[idx_in[idx / cols] * cols + idx % cols];
}

__global__ void store_kv_kernel(const float* __restrict__ k, const float* __restrict__ v,
                                const int32_t* __restrict__ slots, int64_t n_tokens, int64_t n_embd_kv,
                                uint16_t* __restrict__ k_cache, uint16_t* __restrict__ v_cache) {
  launch_dependents();
  grid_dependency_wait();  // launched with pdl (pdl.cuh)
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n_tokens * n_embd_kv) return;
  const int64_t t = idx / n_embd_kv, d = idx % n_embd_kv;
  const int64_t cell = slots[t];
  k_cache[cell * n_embd_kv + d] = __half_as_ushort(__float2half_rn(k[idx]));
  v_cache[cell * n_embd_kv + d] = __half_as_ushort(__float2half_rn(v[idx]));
}

}  // namespace

void rms_norm(const float* x, const float* w, float eps, int64_t rows, int64_t n, float* y, cudaStream_t s) {
  if (rows == 0) return;
  rms_norm_kernel<<<static_cast<unsigned>(rows), kNormThreads, 0, s>>>(x, w, eps, n, y);
  FERRITE_CUDA_LAUNCHED();
}

void rope(float* x, const float* cos_t, const float* sin_t, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
          int n_rot, bool neox, cudaStream_t s) {
  const int half = n_rot / 2;
  const int64_t n = n_tokens * n_heads * half;
  if (n == 0) return;
  launch_kernel(rope_kernel, dim3(blocks_for(n)), dim3(kThreads), 0, s, pdl_chain_enabled(), x, cos_t, sin_t, n_tokens,
                n_heads, head_dim, half, neox);
}

void rope_store_kv(float* qk, const float* v, const float* cos_t, const float* sin_t, int64_t n_head,
                   int64_t n_head_kv, int64_t head_dim, int n_rot, bool neox, const int32_t* slot, uint16_t* k_cache,
                   uint16_t* v_cache, cudaStream_t s) {
  const int half = n_rot / 2;
  const int64_t n = (n_head + n_head_kv) * half + n_head_kv * (head_dim - 2 * half) + n_head_kv * head_dim;
  if (n == 0) return;
  if (2 * half > head_dim) throw InvalidArgument("rope_store_kv: rotated dimensions exceed the head");
  launch_kernel(rope_store_kv_kernel, dim3(blocks_for(n)), dim3(kThreads), 0, s, pdl_chain_enabled(), qk, v, cos_t,
                sin_t, n_head, n_head_kv, head_dim, half, neox, slot, k_cache, v_cache);
}

void swiglu(const float* gate, const float* up, int64_t rows, int64_t n, float* y, cudaStream_t s) {
  if (rows * n == 0) return;
  swiglu_kernel<<<blocks_for(rows * n), kThreads, 0, s>>>(gate, up, rows, n, y);
  FERRITE_CUDA_LAUNCHED();
}

void add_bias(float* y, const float* b, int64_t rows, int64_t n, cudaStream_t s) {
  if (rows * n == 0) return;
  add_bias_kernel<<<blocks_for(rows * n), kThreads, 0, s>>>(y, b, rows, n);
  FERRITE_CUDA_LAUNCHED();
}

void add(float* x, const float* y, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  add_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, y, n);
  FERRITE_CUDA_LAUNCHED();
}

void to_f16(const float* x, uint16_t* y, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  launch_kernel(to_f16_kernel, dim3(blocks_for(n)), dim3(kThreads), 0, s, pdl_chain_enabled(), x, y, n);
}

void get_rows(const GpuMatrix& table, const int32_t* ids, int64_t n_ids, float* x, cudaStream_t s) {
  if (n_ids == 0) return;
  get_rows_kernel<<<blocks_for(n_ids * table.k), kThreads, 0, s>>>(table, ids, n_ids, x);
  FERRITE_CUDA_LAUNCHED();
}

void gather_rows(const float* src, const int32_t* idx, int64_t n, int64_t cols, float* dst, cudaStream_t s) {
  if (n * cols == 0) return;
  gather_rows_kernel<<<blocks_for(n * cols), kThreads, 0, s>>>(src, idx, n, cols, dst);
  FERRITE_CUDA_LAUNCHED();
}

void store_kv(const float* k, const float* v, const int32_t* slots, int64_t n_tokens, int64_t n_embd_kv,
              uint16_t* k_cache, uint16_t* v_cache, cudaStream_t s) {
  if (n_tokens * n_embd_kv == 0) return;
  launch_kernel(store_kv_kernel, dim3(blocks_for(n_tokens * n_embd_kv)), dim3(kThreads), 0, s, pdl_chain_enabled(),
                k, v, slots, n_tokens, n_embd_kv, k_cache, v_cache);
}

}  // namespace ferrite::cuda
