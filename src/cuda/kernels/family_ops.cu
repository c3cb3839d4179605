// Row and element-wise kernels the non-Llama families need (ops.h "other
// families"): LayerNorm, scaling, soft-capping, GELU through llama.cpp's f16
// table, SiLU, the SwiGLU of a fused gate|up product, column gathers, and
// the encoders' attention within a sequence. Each mirrors its CPU twin:
// cpu/ops/norm.cpp layer_norm (f32 terms summed in double), cpu/ops/gelu_f16.cpp
// (the CPU's table itself, copied to the device), cpu/ops/activations.cpp
// (silu with the row kernels' exp), cpu/backend/cpu_attention.cpp
// encoder_attention (f32 scores, ALiBi, softmax, weighted sum).
#include <cuda_fp16.h>

#include <mutex>

#include "core/error.h"
#include "cpu/attention/alibi.h"
#include "cpu/attention/rel_pos_bias.h"
#include "cpu/ops/gelu_f16.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_buffer.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kNormThreads = 256;
// gelu_f16's bounds (cpu/ops/gelu_f16.cpp): the table is bypassed beyond them.
constexpr float kGeluLowCut = -10.0f;
constexpr float kGeluHighCut = 10.0f;
constexpr int64_t kGeluTableSize = int64_t{1} << 16;
// Keys an encoder block holds in shared memory (its scores).
constexpr int64_t kSeqMaxTokens = 4096;

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void layer_norm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                  const float* __restrict__ b, float eps, int64_t n, float* __restrict__ y) {
  __shared__ double scratch[kWarp];
  __shared__ float shared_mean;
  const float* xr = x + blockIdx.x * n;
  float* yr = y + blockIdx.x * n;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += static_cast<double>(xr[i]);
  sum = block_sum(sum, scratch);
  if (threadIdx.x == 0) shared_mean = static_cast<float>(sum / static_cast<double>(n));
  __syncthreads();
  const float mean = shared_mean;
  double sum2 = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float d = xr[i] - mean;
    sum2 += static_cast<double>(d * d);
  }
  __syncthreads();  // scratch is reused
  sum2 = block_sum(sum2, scratch);
  const float variance = static_cast<float>(sum2 / static_cast<double>(n));
  const float scale = 1.0f / sqrtf(variance + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float v = (xr[i] - mean) * scale;
    if (w != nullptr) v *= w[i];
    if (b != nullptr) v += b[i];
    yr[i] = v;
  }
}

__global__ void scale_kernel(float* x, float c, int64_t n) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) x[idx] *= c;
}

__global__ void softcap_kernel(float* x, float cap, int64_t n) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) x[idx] = softcap_f32(x[idx], cap);
}

__global__ void clamp_kernel(float* x, float c, int64_t n) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < n) x[idx] = fminf(fmaxf(x[idx], -c), c);
}

// cpu::swiglu_oai: g = min(gate, limit), u = clamp(up, -limit, limit), y = g / (1 + exp(alpha * -g)) * (u + 1),
// exp as libm's expf (through double; CUDA's expf is not correctly rounded).
__global__ void swiglu_oai_kernel(const float* gate, const float* up, int64_t n, float alpha, float limit, float* y) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  const float g = fminf(gate[idx], limit);
  const float u = fminf(fmaxf(up[idx], -limit), limit);
  const float e = static_cast<float>(exp(static_cast<double>(__fmul_rn(alpha, -g))));
  y[idx] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, e)), __fadd_rn(u, 1.0f));
}

__device__ __forceinline__ float gelu_lookup(const uint16_t* __restrict__ table, float v) {
  if (v <= kGeluLowCut) return 0.0f;
  if (v >= kGeluHighCut) return v;
  return __half2float(__ushort_as_half(table[__half_as_ushort(__float2half_rn(v))]));
}

// y = gelu(gate) * up, or gelu(gate) without up (y may alias either).
__global__ void geglu_kernel(const uint16_t* __restrict__ table, const float* gate, const float* up, int64_t n,
                             float* y) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n) return;
  const float g = gelu_lookup(table, gate[idx]);
  y[idx] = up != nullptr ? g * up[idx] : g;
}

__global__ void silu_kernel(float* x, int64_t rows, int64_t n) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * n) return;
  const float g = x[idx];
  x[idx] = g / (1.0f + row_exp(-g, idx % n, n));
}

// y [rows, n] = silu(gu[:, :n]) * gu[:, n:] of gu [rows, 2n].
__global__ void swiglu_fused_kernel(const float* __restrict__ gu, int64_t rows, int64_t n, float* __restrict__ y) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * n) return;
  const int64_t r = idx / n, i = idx % n;
  const float g = gu[r * 2 * n + i];
  y[idx] = g / (1.0f + row_exp(-g, i, n)) * gu[r * 2 * n + n + i];
}

__global__ void gather_columns_kernel(const float* __restrict__ src, int64_t ld, int64_t col0, int64_t rows,
                                      int64_t cols, float* __restrict__ dst) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx < rows * cols) dst[idx] = src[(idx / cols) * ld + col0 + idx % cols];
}

// One block per (token, head): scores over the key rows of the same sequence
// in shared memory, their softmax, and the weighted sum of v. Queries and
// keys are the same tokens (n_k == n, the encoders) or the encoder's rows
// (cross-attention: k_seq their sequences, no positions).
__global__ void attention_seq_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                     const float* __restrict__ v, const int32_t* __restrict__ seq,
                                     const int32_t* __restrict__ k_seq, const int32_t* __restrict__ pos,
                                     float max_bias, const float* __restrict__ dist_bias, int64_t n_k,
                                     int64_t n_head, int64_t hd, float scale, float* __restrict__ out) {
  extern __shared__ float p[];  // [n_k]
  __shared__ float red[kWarp];
  const int64_t t = blockIdx.x / n_head, h = blockIdx.x % n_head;
  const int64_t width = n_head * hd;
  const float* qt = q + t * width + h * hd;
  const float slope = max_bias > 0.0f ? cpu::alibi_slope(h, n_head, max_bias) : 0.0f;
  constexpr int64_t kDist = 2 * cpu::kRelMaxDistance + 1;
  for (int64_t u = threadIdx.x; u < n_k; u += blockDim.x) {
    float s = -INFINITY;
    if (seq == nullptr || k_seq == nullptr || k_seq[u] == seq[t]) {
      const float* ku = k + u * width + h * hd;
      float acc = 0.0f;
      for (int64_t d = 0; d < hd; ++d) acc = __fmaf_rn(qt[d], ku[d], acc);
      s = acc * scale;
      if (max_bias > 0.0f) s += slope * -static_cast<float>(abs(pos[t] - pos[u]));
      if (dist_bias != nullptr) {
        constexpr int64_t kMax = cpu::kRelMaxDistance;
        int64_t r = pos[u] - pos[t];
        r = r < -kMax ? -kMax : r > kMax ? kMax : r;
        s += dist_bias[h * kDist + kMax + r];
      }
    }
    p[u] = s;
  }
  __syncthreads();
  float m = -INFINITY;
  for (int64_t u = threadIdx.x; u < n_k; u += blockDim.x) m = fmaxf(m, p[u]);
  m = block_max(m, red);
  float sum = 0.0f;
  for (int64_t u = threadIdx.x; u < n_k; u += blockDim.x) {
    const float e = p[u] == -INFINITY ? 0.0f : expf(p[u] - m);
    p[u] = e;
    sum += e;
  }
  sum = block_sum(sum, red);  // (its first barrier orders the writes of p before the reads below)
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t u = 0; u < n_k; ++u) acc = __fmaf_rn(p[u] * inv, v[u * width + h * hd + d], acc);
    out[t * width + h * hd + d] = acc;
  }
}

}  // namespace

void layer_norm(const float* x, const float* w, const float* b, float eps, int64_t rows, int64_t n, float* y,
                cudaStream_t s) {
  if (rows == 0) return;
  layer_norm_kernel<<<static_cast<unsigned>(rows), kNormThreads, 0, s>>>(x, w, b, eps, n, y);
  FERRITE_CUDA_LAUNCHED();
}

void scale(float* x, float c, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  scale_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, c, n);
  FERRITE_CUDA_LAUNCHED();
}

void softcap(float* x, float cap, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  softcap_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, cap, n);
  FERRITE_CUDA_LAUNCHED();
}

void swiglu_oai(const float* gate, const float* up, int64_t n, float alpha, float limit, float* y, cudaStream_t s) {
  if (n == 0) return;
  swiglu_oai_kernel<<<blocks_for(n), kThreads, 0, s>>>(gate, up, n, alpha, limit, y);
  FERRITE_CUDA_LAUNCHED();
}

void clamp(float* x, float c, int64_t n, cudaStream_t s) {
  if (n == 0) return;
  clamp_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, c, n);
  FERRITE_CUDA_LAUNCHED();
}

const uint16_t* gelu_table_device() {
  // One copy per process on the current device (the engine runs on one device).
  static std::mutex mutex;
  static DeviceBuffer* table = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (table == nullptr) {
    auto* t = new DeviceBuffer(static_cast<size_t>(kGeluTableSize) * sizeof(uint16_t));
    FERRITE_CUDA_CHECK(cudaMemcpy(t->as(), cpu::gelu_f16_table(), t->size(), cudaMemcpyHostToDevice));
    // (a pageable copy may return before it lands; kernels on other streams read it next)
    FERRITE_CUDA_CHECK(cudaDeviceSynchronize());
    table = t;
  }
  return table->as<uint16_t>();
}

void geglu_f16(const float* gate, const float* up, int64_t n, float* y, cudaStream_t s) {
  if (n == 0) return;
  geglu_kernel<<<blocks_for(n), kThreads, 0, s>>>(gelu_table_device(), gate, up, n, y);
  FERRITE_CUDA_LAUNCHED();
}

void silu(float* x, int64_t rows, int64_t n, cudaStream_t s) {
  if (rows * n == 0) return;
  silu_kernel<<<blocks_for(rows * n), kThreads, 0, s>>>(x, rows, n);
  FERRITE_CUDA_LAUNCHED();
}

void swiglu_fused(const float* gu, int64_t rows, int64_t n, float* y, cudaStream_t s) {
  if (rows * n == 0) return;
  swiglu_fused_kernel<<<blocks_for(rows * n), kThreads, 0, s>>>(gu, rows, n, y);
  FERRITE_CUDA_LAUNCHED();
}

void gather_columns(const float* src, int64_t ld, int64_t col0, int64_t rows, int64_t cols, float* dst,
                    cudaStream_t s) {
  if (rows * cols == 0) return;
  gather_columns_kernel<<<blocks_for(rows * cols), kThreads, 0, s>>>(src, ld, col0, rows, cols, dst);
  FERRITE_CUDA_LAUNCHED();
}

void attention_seq(const float* q, const float* k, const float* v, const int32_t* seq, const int32_t* pos,
                   float max_alibi_bias, int64_t n, int64_t n_head, int64_t head_dim, float scale, float* out,
                   cudaStream_t s, const float* dist_bias) {
  if (n == 0) return;
  if (n > kSeqMaxTokens) {
    throw InvalidArgument("GPU encoder attention: " + std::to_string(n) + " tokens in one pass (at most " +
                          std::to_string(kSeqMaxTokens) + ")");
  }
  attention_seq_kernel<<<static_cast<unsigned>(n * n_head), kThreads, static_cast<size_t>(n) * sizeof(float), s>>>(
      q, k, v, seq, seq, pos, max_alibi_bias, dist_bias, n, n_head, head_dim, scale, out);
  FERRITE_CUDA_LAUNCHED();
}

void attention_cross(const float* q, const float* k, const float* v, const int32_t* seq, const int32_t* k_seq,
                     int64_t n, int64_t n_k, int64_t n_head, int64_t head_dim, float scale, float* out,
                     cudaStream_t s) {
  if (n == 0) return;
  if (n_k > kSeqMaxTokens) {
    throw InvalidArgument("GPU cross-attention: " + std::to_string(n_k) + " encoder rows (at most " +
                          std::to_string(kSeqMaxTokens) + ")");
  }
  attention_seq_kernel<<<static_cast<unsigned>(n * n_head), kThreads, static_cast<size_t>(n_k) * sizeof(float), s>>>(
      q, k, v, seq, k_seq, nullptr, 0.0f, nullptr, n_k, n_head, head_dim, scale, out);
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
