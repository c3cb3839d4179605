#include "cuda/kernels/ssm.h"

#include "cuda/kernels/check.h"

namespace ferrite::cuda {
namespace {

constexpr int kThreads = 128;

__device__ float silu_f(float v) { return v / (1.0f + expf(-v)); }
__device__ float softplus_f(float v) { return v > 20.0f ? v : log1pf(expf(v)); }

// One thread per channel; tokens in order.
__global__ void ssm_conv_kernel(float* states, const int32_t* slot, const float* in, int64_t in_stride,
                                const float* w, const float* b, int64_t n, int64_t d_conv, int64_t ch, float* out) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= ch) return;
  const int64_t k_last = d_conv - 1;
  const float* wc = w + c * d_conv;
  for (int64_t t = 0; t < n; ++t) {
    float* st = states + static_cast<int64_t>(slot[t]) * k_last * ch;
    const float x = in[t * in_stride + c];
    float acc = b != nullptr ? b[c] : 0.0f;
    for (int64_t k = 0; k < k_last; ++k) acc += wc[k] * st[k * ch + c];
    acc += wc[k_last] * x;
    out[t * ch + c] = silu_f(acc);
    for (int64_t k = 0; k + 1 < k_last; ++k) st[k * ch + c] = st[(k + 1) * ch + c];
    if (k_last > 0) st[(k_last - 1) * ch + c] = x;
  }
}

// One thread per (head, row of the head); tokens in order.
__global__ void ssm_scan_kernel(float* states, const int32_t* slot, const float* xbc, int64_t ch, const float* dt,
                                int64_t dt_stride, const float* dt_bias, const float* a, const float* d,
                                SsmScanDims dims, int64_t n, float* y) {
  const int64_t d_inner = dims.n_head * dims.head_dim;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // h * head_dim + p
  if (i >= d_inner) return;
  const int64_t h = i / dims.head_dim;
  const int64_t g = h / (dims.n_head / dims.n_group);
  for (int64_t t = 0; t < n; ++t) {
    float* s = states + static_cast<int64_t>(slot[t]) * d_inner * dims.d_state + i * dims.d_state;
    const float* row = xbc + t * ch;
    const float* B = row + d_inner + g * dims.d_state;
    const float* C = row + d_inner + dims.n_group * dims.d_state + g * dims.d_state;
    const float dth = softplus_f(dt[t * dt_stride + h] + dt_bias[h]);
    const float decay = expf(dth * a[h]);
    const float xv = row[i];
    const float dx = dth * xv;
    float acc = 0.0f;
    for (int64_t k = 0; k < dims.d_state; ++k) {
      const float v = s[k] * decay + dx * B[k];
      s[k] = v;
      acc += v * C[k];
    }
    y[t * d_inner + i] = acc + d[h] * xv;
  }
}

// One block per (row, group).
__global__ void ssm_gated_norm_kernel(float* y, const float* z, int64_t z_stride, const float* w, int64_t d_inner,
                                      int64_t n_group, float eps) {
  const int64_t t = blockIdx.x, g = blockIdx.y, gs = d_inner / n_group;
  float* yg = y + t * d_inner + g * gs;
  const float* zg = z + t * z_stride + g * gs;
  __shared__ float part[kThreads];
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < gs; i += blockDim.x) {
    const float v = yg[i] * silu_f(zg[i]);
    yg[i] = v;
    ss += v * v;
  }
  part[threadIdx.x] = ss;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (static_cast<int>(threadIdx.x) < step) part[threadIdx.x] += part[threadIdx.x + step];
    __syncthreads();
  }
  const float inv = rsqrtf(part[0] / static_cast<float>(gs) + eps);
  for (int64_t i = threadIdx.x; i < gs; i += blockDim.x) yg[i] = yg[i] * inv * w[g * gs + i];
}

unsigned blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

void ssm_conv(float* states, const int32_t* slot, const float* in, int64_t in_stride, const float* w, const float* b,
              int64_t n, int64_t d_conv, int64_t ch, float* out, cudaStream_t s) {
  if (n <= 0 || ch <= 0) return;
  ssm_conv_kernel<<<blocks(ch), kThreads, 0, s>>>(states, slot, in, in_stride, w, b, n, d_conv, ch, out);
  FERRITE_CUDA_LAUNCHED();
}

void ssm_scan(float* states, const int32_t* slot, const float* xbc, int64_t ch, const float* dt, int64_t dt_stride,
              const float* dt_bias, const float* a, const float* d, const SsmScanDims& dims, int64_t n, float* y,
              cudaStream_t s) {
  const int64_t d_inner = dims.n_head * dims.head_dim;
  if (n <= 0 || d_inner <= 0) return;
  ssm_scan_kernel<<<blocks(d_inner), kThreads, 0, s>>>(states, slot, xbc, ch, dt, dt_stride, dt_bias, a, d, dims, n,
                                                       y);
  FERRITE_CUDA_LAUNCHED();
}

void ssm_gated_norm(float* y, const float* z, int64_t z_stride, const float* w, int64_t n, int64_t d_inner,
                    int64_t n_group, float eps, cudaStream_t s) {
  if (n <= 0) return;
  ssm_gated_norm_kernel<<<dim3(static_cast<unsigned>(n), static_cast<unsigned>(n_group)), kThreads, 0, s>>>(
      y, z, z_stride, w, d_inner, n_group, eps);
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
