// Mixture-of-experts kernels (moe_ops.h): the router's softmax and top-k
// (one warp per token; or phimoe's sparsemixer, twin of cpu/ops/sparsemixer.h), the weighted sum of the experts' outputs with the
// gated shared expert (one thread per output element), and the expert
// products of F32/F16 weights with the expert read on the device (one warp
// per weight row). The quantized expert products are gemv_quant_experts
// (gemv_quant.cu).
#include <cuda_fp16.h>

#include <climits>
#include <string>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/moe_ops.h"

namespace ferrite::cuda {
namespace {

constexpr int kRouteWarps = 4;                           // tokens per block of the router
constexpr int kPerLane = static_cast<int>(kMoeMaxExperts / kWarp);  // experts a lane holds
constexpr int kCombineThreads = 256;
constexpr int kMaxUsed = 64;                             // slots per token the combine kernel sorts
constexpr int kRowWarps = 8;                             // weight rows per block of the float GEMV

// The better of two candidates (probability key, expert id): the larger key,
// then the lower id; id INT_MAX is no candidate.
__device__ __forceinline__ bool better(float key_a, int e_a, float key_b, int e_b) {
  if (e_a == INT_MAX) return false;
  if (e_b == INT_MAX) return true;
  return key_a > key_b || (key_a == key_b && e_a < e_b);
}

// cpu::sparsemixer_route's weight of one round (every lane gets it): 1 /
// the sum of exp(s_e - m) over the experts not taken (the round's best
// included) within the relative gap threshold of m, the round's largest
// logit (NaN key: -inf; none finite: 0).
__device__ __forceinline__ float sparsemixer_weight(const float (&p)[kPerLane], unsigned taken, int lane, int n_expert, float m,
                                    float threshold) {
  if (m == -INFINITY) return 0.0f;
  double sum = 0.0;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + kWarp * i;
    if (e >= n_expert || ((taken >> i) & 1u) || isnan(p[i])) continue;
    const float gap = (m - p[i]) / fmaxf(fabsf(p[i]), m);
    if (!(gap > threshold)) sum += exp(static_cast<double>(p[i] - m));
  }
  sum = warp_sum(sum);
  return static_cast<float>(1.0 / sum);
}

// logits [n, n_expert] -> ids, weights [n, k_used]; one warp per token,
// expert e held by lane e % 32 in slot e / 32.
__global__ void route_kernel(const float* __restrict__ logits, int64_t n, int n_expert, int k_used, bool renorm,
                             int32_t* __restrict__ ids, float* __restrict__ weights, MoeRouteOptions opt) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kRouteWarps + threadIdx.x / kWarp;
  if (t >= n) return;  // the whole warp
  const float* row = logits + t * n_expert;

  // 1. Softmax as cpu::softmax_inplace: max skipping NaN, exp(x - max), the
  // sum in double, then one multiplication by float(1 / sum).
  float p[kPerLane];
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + kWarp * i;
    p[i] = e < n_expert ? row[e] : -INFINITY;
    if (p[i] > mx) mx = p[i];
  }
  mx = warp_max(mx);  // fmaxf: NaN skipped
  if (opt.softmax_weight || opt.sparsemixer) {
    // the choice on the logits; the weights below
  } else if (opt.sigmoid) {
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) p[i] = 1.0f / (1.0f + expf(-p[i]));
  } else if (mx == -INFINITY) {
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) p[i] = 0.0f;
  } else {
    double sum = 0.0;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int e = lane + kWarp * i;
      if (e < n_expert) {
        p[i] = row_exp(p[i] - mx, e, n_expert);
        sum += static_cast<double>(p[i]);
      }
    }
    sum = warp_sum(sum);
    const float inv = static_cast<float>(1.0 / sum);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) p[i] *= inv;
  }

  // 2. k rounds of a warp-wide arg-max over the experts not yet taken.
  unsigned taken = 0;  // bit i: expert lane + 32 i was chosen
  float chosen_sum = 0.0f;
  for (int j = 0; j < k_used; ++j) {
    float key = 0.0f, val = 0.0f;
    int best = INT_MAX;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int e = lane + kWarp * i;
      const float pb = opt.bias != nullptr && e < n_expert ? p[i] + opt.bias[e] : p[i];
      const float kv = isnan(pb) ? -INFINITY : pb;
      if (e < n_expert && !((taken >> i) & 1u) && better(kv, e, key, best)) {
        key = kv;
        val = p[i];
        best = e;
      }
    }
#pragma unroll
    for (int o = kWarp / 2; o > 0; o >>= 1) {
      const float ok = __shfl_xor_sync(kFullMask, key, o), ov = __shfl_xor_sync(kFullMask, val, o);
      const int oe = __shfl_xor_sync(kFullMask, best, o);
      if (better(ok, oe, key, best)) {
        key = ok;
        val = ov;
        best = oe;
      }
    }
    if (opt.sparsemixer) val = sparsemixer_weight(p, taken, lane, n_expert, key, 2.0f * opt.jitter);
    if (best % kWarp == lane) taken |= 1u << (best / kWarp);
    if (lane == 0) {
      ids[t * k_used + j] = best;
      weights[t * k_used + j] = val;
      chosen_sum += val;
    }
  }
  if (opt.sparsemixer) chosen_sum = 1.0f;  // never renormalised
  if (lane == 0 && opt.softmax_weight) {
    // cpu::softmax_inplace over the k chosen logits (fewer than 16: libm's exp, through double here).
    float* w = weights + t * k_used;
    float wmax = -INFINITY;
    for (int j = 0; j < k_used; ++j) wmax = w[j] > wmax ? w[j] : wmax;
    double wsum = 0.0;
    for (int j = 0; j < k_used; ++j) {
      w[j] = wmax == -INFINITY ? 0.0f : row_exp(w[j] - wmax, j, k_used);
      wsum += static_cast<double>(w[j]);
    }
    const float inv = wmax == -INFINITY ? 0.0f : static_cast<float>(1.0 / wsum);
    for (int j = 0; j < k_used; ++j) w[j] *= inv;
    chosen_sum = 1.0f;
  }
  if (lane == 0) {
    for (int j = 0; j < k_used; ++j) {
      if (renorm) weights[t * k_used + j] /= chosen_sum;
      weights[t * k_used + j] *= opt.scale;
    }
  }
}

// One thread per output element of one token (blockIdx.y); the token's
// slots are put in ascending expert id once per block.
__global__ void combine_kernel(const MoeCombine c, float* __restrict__ x) {
  __shared__ int order[kMaxUsed];
  const int64_t t = blockIdx.y;
  const int k = static_cast<int>(c.k_used);
  const int32_t* tid = c.ids + t * k;
  if (threadIdx.x == 0) {
    // Selection by id (k is small; ids of a token are distinct).
    int prev = -1;
    for (int s = 0; s < k; ++s) {
      int pick = -1;
      for (int j = 0; j < k; ++j) {
        if (tid[j] > prev && (pick < 0 || tid[j] < tid[pick])) pick = j;
      }
      if (pick < 0) pick = s;  // repeated ids (not from moe_route): keep slot order
      order[s] = pick;
      prev = tid[pick];
    }
  }
  __syncthreads();
  const int64_t d = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (d >= c.n_embd) return;
  float acc = 0.0f;
  for (int s = 0; s < k; ++s) {
    const int j = order[s];
    const int64_t r = c.rows != nullptr ? c.rows[t * k + j] : t * k + j;
    acc += c.weights[t * k + j] * c.ys[r * c.n_embd + d];
  }
  if (c.sh != nullptr) {
    const float g = c.sh_gate != nullptr ? 1.0f / (1.0f + expf(-c.sh_gate[t])) : 1.0f;
    acc += g * c.sh[t * c.n_embd + d];
  }
  x[t * c.n_embd + d] += acc;
}

// y [n_slots, rows]: warp per weight row of expert ids[slot].
template <bool kF16>
__global__ void gemv_float_experts_kernel(const uint8_t* __restrict__ w, uint64_t row_bytes, int64_t k,
                                          const int32_t* __restrict__ ids, int64_t rows,
                                          const float* __restrict__ x, int64_t act_step, int64_t split,
                                          float* __restrict__ y) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t slot = blockIdx.y;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / kWarp;
  if (r >= rows) return;
  const int64_t e = ids[slot];
  const uint8_t* wr = w + static_cast<uint64_t>(e * rows + r) * row_bytes;
  const float* xr = x + slot * act_step * k;
  float acc = 0.0f;
  for (int64_t i = lane; i < k; i += kWarp) {
    if constexpr (kF16) {
      const float wv = __half2float(reinterpret_cast<const half*>(wr)[i]);
      acc += wv * __half2float(__float2half_rn(xr[i]));  // the CPU's f16 activations
    } else {
      acc += reinterpret_cast<const float*>(wr)[i] * xr[i];
    }
  }
  acc = warp_sum(acc);
  if (lane == 0) y[split > 0 ? (r / split * gridDim.y + slot) * split + r % split : slot * rows + r] = acc;
}

}  // namespace

void moe_route(const float* logits, int64_t n, int64_t n_expert, int64_t k_used, bool renorm, int32_t* ids,
               float* weights, cudaStream_t s, const MoeRouteOptions& opt) {
  if (n_expert < 1 || n_expert > kMoeMaxExperts || k_used < 1 || k_used > n_expert) {
    throw InvalidArgument("moe_route: " + std::to_string(k_used) + " of " + std::to_string(n_expert) +
                          " experts (1 <= used <= experts <= " + std::to_string(kMoeMaxExperts) + ")");
  }
  if (n <= 0) return;
  const auto blocks = static_cast<unsigned>((n + kRouteWarps - 1) / kRouteWarps);
  route_kernel<<<blocks, kRouteWarps * kWarp, 0, s>>>(logits, n, static_cast<int>(n_expert),
                                                      static_cast<int>(k_used), renorm, ids, weights, opt);
  FERRITE_CUDA_LAUNCHED();
}

void moe_combine(const MoeCombine& c, float* x, cudaStream_t s) {
  if (c.k_used < 1 || c.k_used > kMaxUsed) {
    throw InvalidArgument("moe_combine: " + std::to_string(c.k_used) + " experts per token (at most " +
                          std::to_string(kMaxUsed) + ")");
  }
  if (c.n <= 0 || c.n_embd <= 0) return;
  const dim3 grid(static_cast<unsigned>((c.n_embd + kCombineThreads - 1) / kCombineThreads),
                  static_cast<unsigned>(c.n));
  combine_kernel<<<grid, kCombineThreads, 0, s>>>(c, x);
  FERRITE_CUDA_LAUNCHED();
}

void moe_gemv_float(const GpuMatrix& w, const int32_t* ids, int64_t n_slots, int64_t rows, const float* x,
                    int64_t act_step, float* y, cudaStream_t s, int64_t split) {
  if (w.type != TensorType::F32 && w.type != TensorType::F16) {
    throw InvalidArgument("moe_gemv_float: " + tensor_type_name(w.type) + " weights");
  }
  if (rows <= 0 || w.n % rows != 0 || split < 0 || (split > 0 && rows % split != 0)) {
    throw InvalidArgument("moe_gemv_float: rows do not divide the matrix");
  }
  if (n_slots <= 0) return;
  const dim3 grid(static_cast<unsigned>((rows + kRowWarps - 1) / kRowWarps), static_cast<unsigned>(n_slots));
  if (w.type == TensorType::F16) {
    gemv_float_experts_kernel<true><<<grid, kRowWarps * kWarp, 0, s>>>(w.data, w.row_bytes, w.k, ids, rows, x,
                                                                        act_step, split, y);
  } else {
    gemv_float_experts_kernel<false><<<grid, kRowWarps * kWarp, 0, s>>>(w.data, w.row_bytes, w.k, ids, rows, x,
                                                                         act_step, split, y);
  }
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
