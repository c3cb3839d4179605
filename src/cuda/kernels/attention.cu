// Attention over the KV cache (f16, or rows of block types read value by value), one block per (token, head), with the
// CPU's arithmetic (cpu/attention/attention.cpp on its AVX-512 path) so that float
// models reproduce the CPU's bits: q rounded to f16; s_j = (q·K_j) * scale
// in the CPU's dot order (cuda/cpu_order.cuh), soft-capped, plus the mask;
// softmax with the CPU's exp (polynomial on groups of 16, libm's on the
// tail), each group of 16 summed with the lane tree and the groups in
// double; probabilities rounded to f16; out[d] = dot(p, V[:, d]) in the dot
// order over the cells. The scores of all cells live in shared memory
// (attention_max_kv() bounds the cells one token reads). With per-token
// ranges a token's cells are its range, summed as the CPU sums a range.
// A cache of a block type (Typed) is read value by value, each value
// dequantized and rounded to f16 as the CPU's read-back (model/kv_quant.h
// kv_row_to_f16) rounds it, so it gives the CPU's bits too. An f32 or bf16
// K / V (cpu/attention/attention_rows.h) is read as it is, the query and probabilities
// rounded to its type (kept for f32): its CPU twin attention_rows sums in
// another order, so the two agree to f32 rounding, not bit for bit.
#include <algorithm>

#include <cuda_fp16.h>

#include "core/error.h"
#include "cpu/attention/alibi.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/cpu_order.cuh"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kv_blocks.cuh"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kCellsPerPass = kThreads / kOrderLanes;  // cells scored at once (16 lanes each)
constexpr int kDimsPerPass = kThreads / kOrderLanes;   // output dimensions at once (16 chains each)

size_t smem_bytes(int64_t n_kv, int64_t head_dim) {
  return static_cast<size_t>(n_kv + head_dim + kThreads) * sizeof(float);
}

// Value d of row j (of this token's range) of a typed cache, as the CPU reads
// it back: a block type f16-rounded, f32 and bf16 as they are.
__device__ __forceinline__ float typed_at(TensorType t, const uint8_t* rows, int64_t row_bytes, int64_t j,
                                          int64_t d) {
  float x;
  kv_load<1>(t, rows + j * row_bytes, static_cast<int>(d), &x);
  return t == TensorType::F32 || t == TensorType::BF16 ? x : __half2float(__float2half_rn(x));
}

// Typed: K and V rows of any cache type (p.k_type, p.v_type); else f16.
template <bool Typed>
__global__ void __launch_bounds__(kThreads) attention_kernel(const AttentionParams p) {
  extern __shared__ float smem[];
  __shared__ float scratch_f[kWarp];
  __shared__ double scratch_d[kWarp];
  const int64_t h = blockIdx.x, t = blockIdx.y;
  // This token's cells [first, first + n_kv) (all of [0, p.n_kv) without ranges).
  const int64_t first = p.kv_begin != nullptr ? p.kv_begin[t] : 0;
  const int64_t n_kv = p.kv_begin != nullptr ? p.kv_len[t] : p.n_kv;
  const int64_t mask_stride = p.kv_begin != nullptr ? p.mask_stride : p.n_kv;
  const int64_t hd = p.head_dim;
  const int64_t max_kv = p.kv_begin != nullptr ? p.max_len : p.n_kv;
  float* scores = smem;           // [n_kv]
  float* q16 = smem + max_kv;     // [hd]
  float* partial = q16 + hd;      // [kOrderLanes][kDimsPerPass]
  const int64_t g = h / (p.n_head / p.n_head_kv);
  const int64_t kv_stride = p.n_head_kv * hd;
  const int tid = threadIdx.x;
  const float* q = p.q + (t * p.n_head + h) * hd;
  const float* mask = p.mask + t * mask_stride;
  float* out = p.out + (t * p.n_head + h) * hd;
  const half* k_head = reinterpret_cast<const half*>(p.k) + first * kv_stride + g * hd;
  const half* v_head = reinterpret_cast<const half*>(p.v) + first * kv_stride + g * hd;
  // Typed: this token's first K / V rows; values from element g * hd of a row.
  const uint8_t* k_bytes = static_cast<const uint8_t*>(p.k) + first * p.k_row_bytes;
  const uint8_t* v_bytes = static_cast<const uint8_t*>(p.v) + first * p.v_row_bytes;
  auto k_at = [&](int64_t j, int64_t d) { return typed_at(p.k_type, k_bytes, p.k_row_bytes, j, g * hd + d); };
  auto v_at = [&](int64_t j, int64_t d) { return typed_at(p.v_type, v_bytes, p.v_row_bytes, j, g * hd + d); };

  for (int64_t d = tid; d < hd; d += kThreads) q16[d] = kv_round_q(p.k_type, q[d]);
  __syncthreads();

  // Scores s_j = (q·K_j) * scale (+ soft-cap) + slope * mask_j (slope 1 without ALiBi, cpu/attention/alibi.h).
  const float slope = cpu::alibi_slope(h, p.n_head, p.max_alibi_bias);
  auto finish_score = [&](int64_t j, float dot) {
    float s = __fmul_rn(dot, p.scale);
    if (p.softcap > 0.0f) s = softcap_f32(s, p.softcap);
    if (p.dist_bias != nullptr) {
      const auto dist = static_cast<int64_t>(-mask[j]);
      const int64_t d = dist < p.n_dist - 1 ? dist : p.n_dist - 1;
      scores[j] = __fadd_rn(s, p.dist_bias[h * p.n_dist + d]);
    } else {
      scores[j] = __fadd_rn(s, __fmul_rn(slope, mask[j]));
    }
  };
  if (hd % kOrderLanes == 0) {
    // 16 lanes per cell, lane v holding chain v.
    const int v = tid % kOrderLanes, cell = tid / kOrderLanes;
    for (int64_t j0 = 0; j0 < n_kv; j0 += kCellsPerPass) {
      const int64_t j = j0 + cell;
      const bool live = j < n_kv && mask[j] != -INFINITY;
      float acc = 0.0f;
      if (live) {
        const half* kr = k_head + j * kv_stride;
        for (int64_t d = v; d < hd; d += kOrderLanes) {
          acc = __fmaf_rn(q16[d], Typed ? k_at(j, d) : __half2float(kr[d]), acc);
        }
      }
#pragma unroll
      for (int o = kOrderLanes / 2; o > 0; o >>= 1) acc = acc + __shfl_xor_sync(kFullMask, acc, o);
      if (v == 0 && j < n_kv) {
        if (live) {
          finish_score(j, acc);
        } else {
          scores[j] = -INFINITY;
        }
      }
    }
  } else {
    for (int64_t j = tid; j < n_kv; j += kThreads) {
      if (mask[j] == -INFINITY) {
        scores[j] = -INFINITY;
      } else {
        if constexpr (Typed) {
          finish_score(j, dot_cpu_order_fn<true>([&](int64_t d) { return q16[d]; },
                                                 [&](int64_t d) { return k_at(j, d); }, hd));
        } else {
          finish_score(j, dot_cpu_order_serial<true>(q16, k_head + j * kv_stride, hd));
        }
      }
    }
  }
  __syncthreads();

  float max = -INFINITY;
  for (int64_t j = tid; j < n_kv; j += kThreads) max = fmaxf(max, scores[j]);
  max = block_max(max, scratch_f);
  // An attention sink joins the maximum (and, below, the denominator).
  const float sink = p.sinks != nullptr ? p.sinks[h] : -INFINITY;
  max = fmaxf(max, sink);
  if (max == -INFINITY) {
    for (int64_t d = tid; d < hd; d += kThreads) out[d] = 0.0f;
    return;
  }
  for (int64_t j = tid; j < n_kv; j += kThreads) scores[j] = row_exp(__fsub_rn(scores[j], max), j, n_kv);
  __syncthreads();
  // Groups of 16 with the lane tree, in double across groups; the tail in double.
  const int64_t fast = n_kv - n_kv % kExpGroup;
  double sum = 0.0;
  for (int64_t grp = tid; grp < fast / kExpGroup; grp += kThreads) {
    float lanes[kOrderLanes];
#pragma unroll
    for (int i = 0; i < kOrderLanes; ++i) lanes[i] = scores[grp * kExpGroup + i];
    sum += static_cast<double>(tree16(lanes));
  }
  for (int64_t j = fast + tid; j < n_kv; j += kThreads) sum += static_cast<double>(scores[j]);
  sum = block_sum(sum, scratch_d);
  // The sink's exp as the CPU's libm expf (through double: CUDA's expf is not correctly rounded).
  if (p.sinks != nullptr) sum += static_cast<double>(static_cast<float>(exp(static_cast<double>(sink - max))));
  const float inv = static_cast<float>(1.0 / sum);
  // Probabilities rounded as the CPU rounds them for the V type (as the query for K: kv_round_q).
  for (int64_t j = tid; j < n_kv; j += kThreads) scores[j] = kv_round_q(p.v_type, __fmul_rn(scores[j], inv));
  __syncthreads();

  // out[d] = dot(p, V[:, d]) over the cells.
  if (n_kv % kOrderLanes == 0) {
    // Thread (chain c, dimension dd): chain c sums cells c, c+16, ...; the
    // 16 chains of a dimension meet in shared memory for the tree.
    const int c = tid / kDimsPerPass, dd = tid % kDimsPerPass;
    for (int64_t d0 = 0; d0 < hd; d0 += kDimsPerPass) {
      const int64_t d = d0 + dd;
      float acc = 0.0f;
      if (d < hd) {
        for (int64_t j = c; j < n_kv; j += kOrderLanes) {
          acc = __fmaf_rn(scores[j], Typed ? v_at(j, d) : __half2float(v_head[j * kv_stride + d]), acc);
        }
      }
      partial[c * kDimsPerPass + dd] = acc;
      __syncthreads();
      if (tid < kDimsPerPass && d0 + tid < hd) {
        float lanes[kOrderLanes];
#pragma unroll
        for (int i = 0; i < kOrderLanes; ++i) lanes[i] = partial[i * kDimsPerPass + tid];
        out[d0 + tid] = tree16(lanes);
      }
      __syncthreads();
    }
  } else {
    for (int64_t d = tid; d < hd; d += kThreads) {
      if constexpr (Typed) {
        out[d] = dot_cpu_order_fn<true>([&](int64_t j) { return scores[j]; },
                                        [&](int64_t j) { return v_at(j, d); }, n_kv);
      } else {
        out[d] = dot_cpu_order_serial<true>(scores, v_head + d, n_kv, kv_stride);
      }
    }
  }
}

int max_dynamic_smem() {
  static const int bytes = [] {
    int dev = 0, optin = 0;
    FERRITE_CUDA_CHECK(cudaGetDevice(&dev));
    FERRITE_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    // Leave room for the static scratch.
    const int usable = optin - static_cast<int>(kWarp * (sizeof(float) + sizeof(double)));
    FERRITE_CUDA_CHECK(
        cudaFuncSetAttribute(attention_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, usable));
    FERRITE_CUDA_CHECK(
        cudaFuncSetAttribute(attention_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, usable));
    return usable;
  }();
  return bytes;
}

}  // namespace

AttentionPlan plan_attention(const int32_t* kv_begin, const int32_t* kv_len, int64_t n_tokens) {
  AttentionPlan plan;
  for (int64_t t0 = 0; t0 < n_tokens;) {
    int64_t t1 = t0 + 1;  // the run [t0, t1): tokens sharing t0's range
    while (t1 < n_tokens && (kv_begin == nullptr || (kv_begin[t1] == kv_begin[t0] && kv_len[t1] == kv_len[t0]))) ++t1;
    if (t1 - t0 >= kTiledMinRun) {
      for (int64_t q = t0; q < t1; q += kAttentionQTile) {
        plan.q_tiles.push_back(static_cast<int32_t>(q));
        plan.q_tiles.push_back(static_cast<int32_t>(std::min(kAttentionQTile, t1 - q)));
      }
    } else {
      for (int64_t t = t0; t < t1; ++t) plan.decode_tokens.push_back(static_cast<int32_t>(t));
    }
    t0 = t1;
  }
  return plan;
}

int64_t attention_max_kv() {
  constexpr int64_t kMaxHeadDim = 256;
  return static_cast<int64_t>(max_dynamic_smem() / sizeof(float)) - kMaxHeadDim - kThreads;
}

namespace {

// The fast kernels (tiled prefill, decode) take p; else attention_kernel.
bool fast_kernels(const AttentionParams& p) {
  return !exact_products() && p.dist_bias == nullptr && attention_tiled_supports(p) && attention_decode_supports(p);
}

}  // namespace

bool attention_decode_takes_all(const AttentionParams& p) {
  if (!fast_kernels(p)) return false;
  if (p.q_tiles != nullptr || p.decode_tokens != nullptr) return p.n_q_tiles == 0;
  return p.n_tokens < kTiledMinTokens;
}

void attention(const AttentionParams& p, cudaStream_t s) {
  if (p.n_tokens == 0 || p.n_head == 0) return;
  if (p.out_q8.qs != nullptr && !attention_decode_takes_all(p)) {
    throw InvalidArgument("GPU attention: Q8_0 output blocks need the decode kernel for every token");
  }
  if (fast_kernels(p)) {
    if (p.q_tiles != nullptr || p.decode_tokens != nullptr) {
      if (p.n_q_tiles > 0) attention_tiled(p, s);
      if (p.n_decode_tokens > 0) attention_decode(p, s);
    } else if (p.n_tokens >= kTiledMinTokens) {
      attention_tiled(p, s);
    } else {
      attention_decode(p, s);
    }
    return;
  }
  const int64_t cells = p.kv_begin != nullptr ? p.max_len : p.n_kv;  // the most one token reads
  const size_t bytes = smem_bytes(cells, p.head_dim);
  if (bytes > static_cast<size_t>(max_dynamic_smem())) {
    throw InvalidArgument("GPU attention: " + std::to_string(cells) + " cache cells exceed the limit of " +
                          std::to_string(attention_max_kv()));
  }
  if (p.n_tokens > 65535) throw InvalidArgument("GPU attention: too many tokens in one pass");
  const dim3 grid(static_cast<unsigned>(p.n_head), static_cast<unsigned>(p.n_tokens));
  if (attention_typed(p)) {
    attention_kernel<true><<<grid, kThreads, bytes, s>>>(attention_typed_rows(p));
  } else {
    attention_kernel<false><<<grid, kThreads, bytes, s>>>(p);
  }
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
