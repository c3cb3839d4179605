// Attention for decode steps (few tokens per sequence, often one token from
// each of many sequences): a block per (token, head) with kWarps warps; warp
// w scores cells w, w + kWarps, ... of the token's range, kUnroll cells at a
// time (independent loads in flight), a lane holding HD / 32 dimensions of q,
// of each K and V row and of the output, so that a row is one coalesced warp
// access and a score is one warp reduction. Each warp keeps an online
// softmax (running max, sum, weighted V); the warps' states merge in shared
// memory at the end. Arithmetic: q rounded to f16 as the CPU does; scores,
// probabilities and sums in f32 (the CPU rounds probabilities to f16), so
// results differ from cpu/attention.cpp within f16 rounding, like the tiled
// kernel's.
#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/device_math.cuh"
#include "cuda/ops.h"
#include "cuda/pdl.cuh"

namespace ferrite::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * kWarp;
constexpr int kUnroll = 4;  // cells a warp scores before it reduces

template <int HD>
__global__ void __launch_bounds__(kThreads) attention_decode_kernel(const AttentionParams p) {
  grid_dependency_wait();  // launched with pdl (pdl.cuh)
  launch_dependents();
  constexpr int kPer = HD / kWarp;  // dimensions per lane: 2 (HD 64) or 4 (HD 128)
  __shared__ float warp_m[kWarps], warp_l[kWarps];
  __shared__ float warp_acc[kWarps][HD];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t h = blockIdx.x;
  const int64_t t = p.decode_tokens != nullptr ? p.decode_tokens[blockIdx.y] : blockIdx.y;
  const int64_t g = h / (p.n_head / p.n_head_kv);
  const int64_t kv_stride = p.n_head_kv * HD;
  const bool ranges = p.kv_begin != nullptr;
  const int64_t first = ranges ? p.kv_begin[t] : 0;
  const int64_t len = ranges ? p.kv_len[t] : p.n_kv;
  const float* mask = p.mask + t * (ranges ? p.mask_stride : p.n_kv);
  const half* k_rows = reinterpret_cast<const half*>(p.k) + first * kv_stride + g * HD + lane * kPer;
  const half* v_rows = reinterpret_cast<const half*>(p.v) + first * kv_stride + g * HD + lane * kPer;

  float q[kPer];
  const float* qrow = p.q + (t * p.n_head + h) * HD + lane * kPer;
#pragma unroll
  for (int i = 0; i < kPer; ++i) q[i] = __half2float(__float2half_rn(qrow[i]));

  float m_run = -INFINITY, l_run = 0.0f;
  float acc[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) acc[i] = 0.0f;

  auto load_row = [](const half* r, float* out) {
    if constexpr (kPer == 4) {
      const uint2 raw = *reinterpret_cast<const uint2*>(r);
      const float2 a = __half22float2(*reinterpret_cast<const half2*>(&raw.x));
      const float2 b = __half22float2(*reinterpret_cast<const half2*>(&raw.y));
      out[0] = a.x;
      out[1] = a.y;
      out[2] = b.x;
      out[3] = b.y;
    } else {
      const float2 a = __half22float2(*reinterpret_cast<const half2*>(r));
      out[0] = a.x;
      out[1] = a.y;
    }
  };

  for (int64_t j0 = warp; j0 < len; j0 += static_cast<int64_t>(kWarps) * kUnroll) {
    float s[kUnroll], mk[kUnroll];
    float vrow[kUnroll][kPer];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t j = j0 + static_cast<int64_t>(u) * kWarps;
      mk[u] = j < len ? mask[j] : -INFINITY;
      s[u] = 0.0f;
      if (mk[u] != -INFINITY) {
        float krow[kPer];
        load_row(k_rows + j * kv_stride, krow);
        load_row(v_rows + j * kv_stride, vrow[u]);
#pragma unroll
        for (int i = 0; i < kPer; ++i) s[u] = __fmaf_rn(q[i], krow[i], s[u]);
      } else {
#pragma unroll
        for (int i = 0; i < kPer; ++i) vrow[u][i] = 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int o = kWarp / 2; o > 0; o >>= 1) s[u] += __shfl_xor_sync(kFullMask, s[u], o);
    }
    float tile_max = -INFINITY;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float v = s[u] * p.scale;
      if (p.softcap > 0.0f) v = tanhf(v / p.softcap) * p.softcap;
      s[u] = mk[u] == -INFINITY ? -INFINITY : v + mk[u];
      tile_max = fmaxf(tile_max, s[u]);
    }
    if (tile_max == -INFINITY) continue;  // every cell of this step hidden (same for the whole warp)
    const float m_new = fmaxf(m_run, tile_max);
    const float corr = m_run == -INFINITY ? 0.0f : expf(m_run - m_new);
    l_run *= corr;
#pragma unroll
    for (int i = 0; i < kPer; ++i) acc[i] *= corr;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const float pu = s[u] == -INFINITY ? 0.0f : expf(s[u] - m_new);
      l_run += pu;
#pragma unroll
      for (int i = 0; i < kPer; ++i) acc[i] = __fmaf_rn(pu, vrow[u][i], acc[i]);
    }
    m_run = m_new;
  }

  // Merge the warps' states.
  if (lane == 0) {
    warp_m[warp] = m_run;
    warp_l[warp] = l_run;
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i) warp_acc[warp][lane * kPer + i] = acc[i];
  __syncthreads();
  if (warp != 0) return;
  float m = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) m = fmaxf(m, warp_m[w]);
  float l = 0.0f, out[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) out[i] = 0.0f;
  if (m != -INFINITY) {
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float c = warp_m[w] == -INFINITY ? 0.0f : expf(warp_m[w] - m);
      l += warp_l[w] * c;
#pragma unroll
      for (int i = 0; i < kPer; ++i) out[i] = __fmaf_rn(warp_acc[w][lane * kPer + i], c, out[i]);
    }
  }
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // every cell hidden: zeros, as the CPU
  float* orow = p.out + (t * p.n_head + h) * HD + lane * kPer;
#pragma unroll
  for (int i = 0; i < kPer; ++i) orow[i] = out[i] * inv;
}

template <int HD>
void launch(const AttentionParams& p, cudaStream_t s) {
  const int64_t rows = p.decode_tokens != nullptr ? p.n_decode_tokens : p.n_tokens;
  if (rows > 65535 || p.n_head > 0x7FFFFFFF) throw InvalidArgument("GPU attention: too many tokens or heads");
  launch_kernel(attention_decode_kernel<HD>, dim3(static_cast<unsigned>(p.n_head), static_cast<unsigned>(rows)),
                dim3(kThreads), 0, s, pdl_chain_enabled(), p);
}

}  // namespace

bool attention_decode_supports(const AttentionParams& p) {
  return (p.head_dim == 64 || p.head_dim == 128) && p.n_head_kv > 0 && p.n_head % p.n_head_kv == 0 &&
         reinterpret_cast<uintptr_t>(p.k) % 8 == 0 && reinterpret_cast<uintptr_t>(p.v) % 8 == 0;
}

void attention_decode(const AttentionParams& p, cudaStream_t s) {
  if (p.n_tokens == 0 || p.n_head == 0 || (p.decode_tokens != nullptr && p.n_decode_tokens == 0)) return;
  if (!attention_decode_supports(p)) throw InvalidArgument("GPU attention: shape not supported by the decode kernel");
  if (p.head_dim == 64) {
    launch<64>(p, s);
  } else {
    launch<128>(p, s);
  }
}

}  // namespace ferrite::cuda
