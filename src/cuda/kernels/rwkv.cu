#include "cuda/kernels/rwkv.h"

#include "cuda/kernels/check.h"

namespace ferrite::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kHeadThreads = 64;  // per (token, head) block

__device__ float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

unsigned blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void shift_kernel(const float* h, int64_t n, int64_t e, const int32_t* idx, float* rows, int64_t stride,
                             float* sx) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= e) return;
  for (int64_t t = 0; t < n; ++t) {
    float* row = rows + static_cast<int64_t>(idx[t]) * stride;
    const float x = h[t * e + c];
    sx[t * e + c] = row[c] - x;
    row[c] = x;
  }
}

__global__ void mix_kernel(const float* h, const float* sx, const float* lerp, const float* m, int64_t n, int64_t e,
                           float* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * e) return;
  const float l = m != nullptr ? m[i] + lerp[i % e] : lerp[i % e];
  out[i] = h[i] + sx[i] * l;
}

__global__ void act_kernel(RwkvAct act, float* x, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float v = x[i];
  switch (act) {
    case RwkvAct::Tanh: x[i] = tanhf(v); break;
    case RwkvAct::Sigmoid: x[i] = sigm(v); break;
    case RwkvAct::Silu: x[i] = v * sigm(v); break;
    case RwkvAct::ReluSqr: x[i] = v > 0.0f ? v * v : 0.0f; break;
  }
}

__global__ void mul_kernel(float* x, const float* y, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) x[i] *= y[i];
}

__global__ void decay6_kernel(float* w, const float* d0, int64_t n, int64_t e) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n * e) w[i] = expf(-expf(w[i] + d0[i % e]));
}

__global__ void residual7_kernel(float* v, const float* vf, const float* m, const float* v0, int64_t n, int64_t e) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n * e) v[i] += (vf[i] - v[i]) * sigm(m[i] + v0[i % e]);
}

// The sum of part[0 .. blockDim.x) into part[0] (blockDim.x a power of two).
__device__ float block_sum(float* part, float v) {
  part[threadIdx.x] = v;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (static_cast<int>(threadIdx.x) < step) part[threadIdx.x] += part[threadIdx.x + step];
    __syncthreads();
  }
  const float r = part[0];
  __syncthreads();
  return r;
}

// Block (token t, head h): q = t * e + h * hs.
__global__ void prepare7_kernel(cpu::Rwkv7Vectors p, int64_t e, int64_t hs, float* dw, float* a, float* k, float* kk,
                                float* b) {
  __shared__ float part[kHeadThreads];
  const int64_t o = static_cast<int64_t>(blockIdx.y) * hs, q = static_cast<int64_t>(blockIdx.x) * e + o;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < hs; i += blockDim.x) {
    const int64_t c = o + i;
    dw[q + i] = expf(-0.606531f * sigm(dw[q + i] + p.w0[c]));
    const float ai = sigm(a[q + i] + p.a0[c]);
    a[q + i] = ai;
    const float kv = k[q + i];
    kk[q + i] = kv * p.k_k[c];
    k[q + i] = kv * (1.0f + (ai - 1.0f) * p.k_a[c]);
    ss += kk[q + i] * kk[q + i];
  }
  const float inv = 1.0f / fmaxf(sqrtf(block_sum(part, ss)), 1e-12f);
  for (int64_t i = threadIdx.x; i < hs; i += blockDim.x) {
    const float kn = kk[q + i] * inv;
    b[q + i] = kn * a[q + i];
    kk[q + i] = -kn;
  }
}

__global__ void bonus7_kernel(float* y, const float* r, const float* k, const float* v, const float* r_k, int64_t e,
                              int64_t hs) {
  __shared__ float part[kHeadThreads];
  const int64_t o = static_cast<int64_t>(blockIdx.y) * hs, q = static_cast<int64_t>(blockIdx.x) * e + o;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < hs; i += blockDim.x) s += r[q + i] * k[q + i] * r_k[o + i];
  s = block_sum(part, s);
  for (int64_t i = threadIdx.x; i < hs; i += blockDim.x) y[q + i] += s * v[q + i];
}

__global__ void group_norm_kernel(float* y, int64_t e, int64_t hs, float eps, const float* ln, const float* ln_b) {
  __shared__ float part[kHeadThreads];
  const int64_t o = static_cast<int64_t>(blockIdx.y) * hs, q = static_cast<int64_t>(blockIdx.x) * e + o;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < hs; i += blockDim.x) s += y[q + i];
  const float mean = block_sum(part, s) / static_cast<float>(hs);
  float v = 0.0f;
  for (int64_t i = threadIdx.x; i < hs; i += blockDim.x) v += (y[q + i] - mean) * (y[q + i] - mean);
  const float inv = rsqrtf(block_sum(part, v) / static_cast<float>(hs) + eps);
  for (int64_t i = threadIdx.x; i < hs; i += blockDim.x) y[q + i] = (y[q + i] - mean) * inv * ln[o + i] + ln_b[o + i];
}

// Block h, thread j (a value column of S [key i][value j]); the token's r, k, w in shared memory.
__global__ void wkv6_kernel(float* states, const int32_t* idx, const float* r, const float* k, const float* v,
                            const float* w, const float* u, int64_t n, int64_t nh, int64_t hs, float scale,
                            float* y) {
  extern __shared__ float sh[];
  float *rs = sh, *ks = sh + hs, *ws = sh + 2 * hs;
  const int64_t h = blockIdx.x, j = threadIdx.x, e = nh * hs, o = h * hs;
  for (int64_t t = 0; t < n; ++t) {
    __syncthreads();
    rs[j] = r[t * e + o + j];
    ks[j] = k[t * e + o + j];
    ws[j] = w[t * e + o + j];
    __syncthreads();
    float* S = states + static_cast<int64_t>(idx[t]) * e * hs + h * hs * hs;
    const float vj = v[t * e + o + j];
    float acc = 0.0f;
    if (u != nullptr) {
      for (int64_t i = 0; i < hs; ++i) {
        const float kv = ks[i] * vj;
        const float sij = S[i * hs + j];
        acc += rs[i] * (sij + u[o + i] * kv);
        S[i * hs + j] = ws[i] * sij + kv;
      }
    } else {  // the gated linear attention (rwkv6qwen2)
      for (int64_t i = 0; i < hs; ++i) {
        const float sij = S[i * hs + j] * ws[i] + ks[i] * vj;
        S[i * hs + j] = sij;
        acc += rs[i] * scale * sij;
      }
    }
    y[t * e + o + j] = acc;
  }
}

// Block h, thread i (a row of S [value i][key j]).
__global__ void wkv7_kernel(float* states, const int32_t* idx, const float* r, const float* w, const float* k,
                            const float* v, const float* a, const float* b, int64_t n, int64_t nh, int64_t hs,
                            float* y) {
  extern __shared__ float sh[];
  float *rs = sh, *ws = sh + hs, *ks = sh + 2 * hs, *as = sh + 3 * hs, *bs = sh + 4 * hs;
  const int64_t h = blockIdx.x, i = threadIdx.x, e = nh * hs, o = h * hs;
  for (int64_t t = 0; t < n; ++t) {
    __syncthreads();
    const int64_t q = t * e + o + i;
    rs[i] = r[q];
    ws[i] = w[q];
    ks[i] = k[q];
    as[i] = a[q];
    bs[i] = b[q];
    __syncthreads();
    float* Si = states + static_cast<int64_t>(idx[t]) * e * hs + h * hs * hs + i * hs;
    float sa = 0.0f;
    for (int64_t j = 0; j < hs; ++j) sa += as[j] * Si[j];
    const float vi = v[q];
    float acc = 0.0f;
    for (int64_t j = 0; j < hs; ++j) {
      const float s = Si[j] * ws[j] + vi * ks[j] + sa * bs[j];
      Si[j] = s;
      acc += s * rs[j];
    }
    y[q] = acc;
  }
}

__global__ void repeat_kernel(const float* src, int64_t n, int64_t n_kv, int64_t group, int64_t hs, float* dst) {
  const int64_t heads = n_kv * group, total = n * heads * hs;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int64_t c = i % hs, h = (i / hs) % heads, t = i / (hs * heads);
  dst[i] = src[(t * n_kv + h / group) * hs + c];
}

__global__ void key_decay_kernel(float* k, const float* w, int64_t count) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) k[i] -= k[i] * w[i];
}

dim3 head_grid(int64_t n, int64_t e, int64_t hs) {
  return dim3(static_cast<unsigned>(n), static_cast<unsigned>(e / hs));
}

}  // namespace

void rwkv_shift(const float* h, int64_t n, int64_t n_embd, const int32_t* idx, float* rows, int64_t row_stride,
                float* sx, cudaStream_t s) {
  if (n <= 0) return;
  shift_kernel<<<blocks(n_embd), kThreads, 0, s>>>(h, n, n_embd, idx, rows, row_stride, sx);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv_mix(const float* h, const float* sx, const float* lerp, const float* m, int64_t n, int64_t n_embd,
              float* out, cudaStream_t s) {
  if (n <= 0) return;
  mix_kernel<<<blocks(n * n_embd), kThreads, 0, s>>>(h, sx, lerp, m, n, n_embd, out);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv_act(RwkvAct act, float* x, int64_t count, cudaStream_t s) {
  if (count <= 0) return;
  act_kernel<<<blocks(count), kThreads, 0, s>>>(act, x, count);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv_mul(float* x, const float* y, int64_t count, cudaStream_t s) {
  if (count <= 0) return;
  mul_kernel<<<blocks(count), kThreads, 0, s>>>(x, y, count);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv6_decay(float* w, const float* d0, int64_t n, int64_t n_embd, cudaStream_t s) {
  if (n <= 0) return;
  decay6_kernel<<<blocks(n * n_embd), kThreads, 0, s>>>(w, d0, n, n_embd);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv7_value_residual(float* v, const float* v_first, const float* m, const float* v0, int64_t n,
                          int64_t n_embd, cudaStream_t s) {
  if (n <= 0) return;
  residual7_kernel<<<blocks(n * n_embd), kThreads, 0, s>>>(v, v_first, m, v0, n, n_embd);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv7_prepare(const cpu::Rwkv7Vectors& p, int64_t n, int64_t n_embd, int64_t hs, float* dw, float* a,
                   float* k, float* kk, float* b, cudaStream_t s) {
  if (n <= 0) return;
  prepare7_kernel<<<head_grid(n, n_embd, hs), kHeadThreads, 0, s>>>(p, n_embd, hs, dw, a, k, kk, b);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv7_bonus(float* y, const float* r, const float* k, const float* v, const float* r_k, int64_t n,
                 int64_t n_embd, int64_t hs, cudaStream_t s) {
  if (n <= 0) return;
  bonus7_kernel<<<head_grid(n, n_embd, hs), kHeadThreads, 0, s>>>(y, r, k, v, r_k, n_embd, hs);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv_group_norm(float* y, int64_t n, int64_t n_embd, int64_t hs, float eps, const float* ln, const float* ln_b,
                     cudaStream_t s) {
  if (n <= 0) return;
  group_norm_kernel<<<head_grid(n, n_embd, hs), kHeadThreads, 0, s>>>(y, n_embd, hs, eps, ln, ln_b);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv_wkv6(float* states, const int32_t* idx, const float* r, const float* k, const float* v, const float* w,
               const float* u, const WkvDims& d, float* y, cudaStream_t s) {
  if (d.n <= 0) return;
  const auto shared = static_cast<size_t>(3 * d.hs) * sizeof(float);
  wkv6_kernel<<<static_cast<unsigned>(d.n_head), static_cast<unsigned>(d.hs), shared, s>>>(states, idx, r, k, v, w, u,
                                                                                          d.n, d.n_head, d.hs, d.scale,
                                                                                          y);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv_repeat_heads(const float* src, int64_t n, int64_t n_kv, int64_t group, int64_t hs, float* dst,
                       cudaStream_t s) {
  if (n <= 0) return;
  repeat_kernel<<<blocks(n * n_kv * group * hs), kThreads, 0, s>>>(src, n, n_kv, group, hs, dst);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv_key_decay(float* k, const float* w, int64_t count, cudaStream_t s) {
  if (count <= 0) return;
  key_decay_kernel<<<blocks(count), kThreads, 0, s>>>(k, w, count);
  FERRITE_CUDA_LAUNCHED();
}

void rwkv_wkv7(float* states, const int32_t* idx, const float* r, const float* w, const float* k, const float* v,
               const float* a, const float* b, const WkvDims& d, float* y, cudaStream_t s) {
  if (d.n <= 0) return;
  const auto shared = static_cast<size_t>(5 * d.hs) * sizeof(float);
  wkv7_kernel<<<static_cast<unsigned>(d.n_head), static_cast<unsigned>(d.hs), shared, s>>>(
      states, idx, r, w, k, v, a, b, d.n, d.n_head, d.hs, y);
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
