// Attention for decode steps (few tokens per sequence, often one token from
// each of many sequences): a block per (token, head) with W warps; warp
// w scores cells w, w + W, ... of the token's range, kUnroll (block rows: kUnrollTyped) cells at a
// time (their loads issued before the mask is known, all in flight at once), a lane holding HD / 32 dimensions of q,
// of each K and V row and of the output, so that a row is one coalesced warp
// access and a score is one warp reduction. Each warp keeps an online
// softmax (running max, sum, weighted V); the warps' states merge in shared
// memory at the end. Arithmetic: q rounded as the CPU rounds it for the K
// type (f16; bf16 for bf16 K; kept for f32 K: kv_round_q); scores,
// probabilities and sums in f32 (the CPU rounds probabilities to f16), so
// results differ from cpu/attention/attention.cpp within f16 rounding, like the tiled
// kernel's. A cache of a block type (Typed) is read block by block into
// registers (kv_blocks.cuh: a lane's HD / 32 values never straddle a block),
// its values unrounded f32 (the CPU rounds them to f16); f32 and bf16 rows
// are read as they are (as the CPU's attention_rows.h; with f32 K and V its
// CPU twin is that f32 attention, which this kernel matches to f32 rounding).
// Long ranges with few (token, head) blocks (one sequence deep into its
// context) are split over the cells (flash-decoding): split z of a token
// takes the z-th of p.n_split equal chunks of its range and leaves its
// unnormalized state (m, l, weighted V) in p.split_scratch; a second kernel
// merges the chunks' states as the warps' are merged. The kernel writing a
// head's output (either) can also write its Q8_0 blocks (p.out_q8) for the
// product after attention: one quantizer launch less per layer.
#include <algorithm>
#include <cstdlib>

#include <cuda_fp16.h>

#include "core/error.h"
#include "cpu/attention/alibi.h"
#include "backend/switches.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kv_blocks.cuh"
#include "cuda/kernels/ops.h"
#include "cuda/kernels/pdl.cuh"

namespace ferrite::cuda {
namespace {

// Warps per block: 16, 8 or 4, the most that keep blocks * warps within
// kWarpsPerSm per SM (one token's few heads: 16 warps, each scoring fewer
// cells one after another); FERRITE_CUDA_ATTN_WARPS=4|8|16 sets it.
constexpr int kMaxWarps = 16, kMinWarps = 4;
constexpr int64_t kWarpsPerSm = 16;
constexpr int kUnroll = 4;       // cells a warp scores before it reduces (f16 rows)
constexpr int kUnrollTyped = 8;  // the same for block rows (more loads in flight for their longer reads)
constexpr int kSplitExtra = 2;        // floats of a split's state beyond HD: m, l
constexpr int64_t kMaxSplits = 64;
constexpr int64_t kMinSplitCells = 256;  // cells per split at least
constexpr int kBlocksPerSm = 4;          // split until about this many blocks per SM

// Writes out row values v (the KPer values of this lane at flat element e,
// e a multiple of KPer) and, with p.out_q8 set, their Q8_0 blocks as
// act_quant.cu quantize_q8_0_kernel writes them (d = amax / 127 rounded to
// f16, q = rint(v * 127 / amax), sums of q): 32 / KPer lanes hold a block.
// Every lane of the warp calls it.
template <int KPer>
__device__ __forceinline__ void write_out(const AttentionParams& p, int64_t e, const float (&v)[KPer]) {
  float* orow = p.out + e;
#pragma unroll
  for (int i = 0; i < KPer; ++i) orow[i] = v[i];
  if (p.out_q8.qs == nullptr) return;
  constexpr int kLanes = 32 / KPer;  // lanes per 32-value block
  constexpr float kQ8Max = 127.0f;
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < KPer; ++i) amax = fmaxf(amax, fabsf(v[i]));
#pragma unroll
  for (int o = 1; o < kLanes; o <<= 1) amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, o));
  const float d = amax / kQ8Max;
  const float id = amax != 0.0f ? kQ8Max / amax : 0.0f;
  uint32_t packed = 0;
  int sum = 0;
#pragma unroll
  for (int i = 0; i < KPer; ++i) {
    const int q = __float2int_rn(v[i] * id);
    sum += q;
    packed |= (static_cast<uint32_t>(q) & 0xFFu) << (8 * i);
  }
#pragma unroll
  for (int o = 1; o < kLanes; o <<= 1) sum += __shfl_xor_sync(kFullMask, sum, o);
  if constexpr (KPer == 4) {
    *reinterpret_cast<uint32_t*>(p.out_q8.qs + e) = packed;
  } else {
    *reinterpret_cast<uint16_t*>(p.out_q8.qs + e) = static_cast<uint16_t>(packed);
  }
  if (threadIdx.x % kLanes == 0) {
    p.out_q8.d[e / 32] = __half2float(__float2half_rn(d));
    p.out_q8.sums[e / 32] = sum;
  }
}

// KT, VT: the K and V cache types (kv_blocks.cuh kv_read; kAnyKvType: p's,
// at run time). Typed: either is not f16 (rows of p.k_row_bytes / v_row_bytes).
// W: warps per block.
template <int HD, TensorType KT, TensorType VT, int W>
__global__ void __launch_bounds__(W * kWarp) attention_decode_kernel(const AttentionParams p) {
  constexpr bool Typed = KT != TensorType::F16 || VT != TensorType::F16;
  constexpr int kCells = Typed ? kUnrollTyped : kUnroll;
  launch_dependents();
  grid_dependency_wait();  // launched with pdl (pdl.cuh)
  constexpr int kPer = HD / kWarp;  // dimensions per lane: 2 (HD 64) or 4 (HD 128)
  __shared__ float warp_m[W], warp_l[W];
  __shared__ float warp_acc[W][HD];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t h = blockIdx.x;
  const int64_t t = p.decode_tokens != nullptr ? p.decode_tokens[blockIdx.y] : blockIdx.y;
  const int64_t g = h / (p.n_head / p.n_head_kv);
  const int64_t kv_stride = p.n_head_kv * HD;
  const bool ranges = p.kv_begin != nullptr;
  // This block's cells: chunk blockIdx.z of the token's range (the whole range without a split).
  const int64_t range_len = ranges ? p.kv_len[t] : p.n_kv;
  const int64_t chunk = (range_len + p.n_split - 1) / p.n_split;
  const int64_t c0 = min(range_len, static_cast<int64_t>(blockIdx.z) * chunk);
  const int64_t first = (ranges ? p.kv_begin[t] : 0) + c0;
  const int64_t len = min(range_len - c0, chunk);
  const float* mask = p.mask + t * (ranges ? p.mask_stride : p.n_kv) + c0;
  const float slope = cpu::alibi_slope(h, p.n_head, p.max_alibi_bias);  // 1 without ALiBi
  const half* k_rows = reinterpret_cast<const half*>(p.k) + first * kv_stride + g * HD + lane * kPer;
  const half* v_rows = reinterpret_cast<const half*>(p.v) + first * kv_stride + g * HD + lane * kPer;
  // Typed: rows of k_row_bytes / v_row_bytes, this lane's values from element e_lane.
  const uint8_t* k_bytes = static_cast<const uint8_t*>(p.k) + first * p.k_row_bytes;
  const uint8_t* v_bytes = static_cast<const uint8_t*>(p.v) + first * p.v_row_bytes;
  const int e_lane = static_cast<int>(g * HD + lane * kPer);

  float q[kPer];
  const float* qrow = p.q + (t * p.n_head + h) * HD + lane * kPer;
#pragma unroll
  for (int i = 0; i < kPer; ++i) q[i] = kv_round_q(p.k_type, qrow[i]);

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

  for (int64_t j0 = warp; j0 < len; j0 += static_cast<int64_t>(W) * kCells) {
    float s[kCells], mk[kCells];
    float vrow[kCells][kPer];
#pragma unroll
    for (int u = 0; u < kCells; ++u) {
      const int64_t j = j0 + static_cast<int64_t>(u) * W;
      mk[u] = j < len ? mask[j] : -INFINITY;
      s[u] = 0.0f;
      // Loads that do not wait for the mask (a row of the range for every u),
      // so that all of them are in flight at once; a hidden cell's V is
      // dropped below and its score is -inf.
      const int64_t jr = j < len ? j : len - 1;
      float krow[kPer];
      if constexpr (Typed) {
        kv_read<KT, kPer>(p.k_type, k_bytes + jr * p.k_row_bytes, e_lane, krow);
        kv_read<VT, kPer>(p.v_type, v_bytes + jr * p.v_row_bytes, e_lane, vrow[u]);
      } else {
        load_row(k_rows + jr * kv_stride, krow);
        load_row(v_rows + jr * kv_stride, vrow[u]);
      }
#pragma unroll
      for (int i = 0; i < kPer; ++i) s[u] = __fmaf_rn(q[i], krow[i], s[u]);
      if (mk[u] == -INFINITY) {
#pragma unroll
        for (int i = 0; i < kPer; ++i) vrow[u][i] = 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < kCells; ++u) {
#pragma unroll
      for (int o = kWarp / 2; o > 0; o >>= 1) s[u] += __shfl_xor_sync(kFullMask, s[u], o);
    }
    float tile_max = -INFINITY;
#pragma unroll
    for (int u = 0; u < kCells; ++u) {
      float v = s[u] * p.scale;
      if (p.softcap > 0.0f) v = tanhf(v / p.softcap) * p.softcap;
      s[u] = mk[u] == -INFINITY ? -INFINITY : v + slope * mk[u];
      tile_max = fmaxf(tile_max, s[u]);
    }
    if (tile_max == -INFINITY) continue;  // every cell of this step hidden (same for the whole warp)
    const float m_new = fmaxf(m_run, tile_max);
    const float corr = m_run == -INFINITY ? 0.0f : expf(m_run - m_new);
    l_run *= corr;
#pragma unroll
    for (int i = 0; i < kPer; ++i) acc[i] *= corr;
#pragma unroll
    for (int u = 0; u < kCells; ++u) {
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
  for (int w = 0; w < W; ++w) m = fmaxf(m, warp_m[w]);
  float l = 0.0f, out[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) out[i] = 0.0f;
  if (m != -INFINITY) {
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const float c = warp_m[w] == -INFINITY ? 0.0f : expf(warp_m[w] - m);
      l += warp_l[w] * c;
#pragma unroll
      for (int i = 0; i < kPer; ++i) out[i] = __fmaf_rn(warp_acc[w][lane * kPer + i], c, out[i]);
    }
  }
  if (p.n_split > 1) {
    // [rows, n_head, n_split] states of HD + 2 floats: weighted V, then m, l.
    float* st = p.split_scratch + ((static_cast<int64_t>(blockIdx.y) * p.n_head + h) * p.n_split + blockIdx.z) *
                                      (HD + kSplitExtra);
#pragma unroll
    for (int i = 0; i < kPer; ++i) st[lane * kPer + i] = out[i];
    if (lane == 0) {
      st[HD] = m;
      st[HD + 1] = l;
    }
    return;
  }
  const float inv = softmax_out_scale(m, l, p.sinks, h);  // every cell hidden: zeros, as the CPU
#pragma unroll
  for (int i = 0; i < kPer; ++i) out[i] *= inv;
  write_out(p, (t * p.n_head + h) * HD + lane * kPer, out);
}

template <int HD, int W>
void launch_split(const AttentionParams& p, dim3 grid, bool pdl, cudaStream_t s);

int sm_count() {
  static const int sms = [] {
    int dev = 0, n = 0;
    FERRITE_CUDA_CHECK(cudaGetDevice(&dev));
    FERRITE_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  return sms;
}

int warps_per_block(int64_t blocks) {
  static const int forced = backend::env_switches().cuda_attn_warps;  // FERRITE_CUDA_ATTN_WARPS
  if (forced != 0) return forced;
  int w = kMaxWarps;
  while (w > kMinWarps && blocks * w > kWarpsPerSm * sm_count()) w /= 2;
  return w;
}

// Merges the n_split states of a (token, head) (grid as the split kernel's
// without z; one warp, a lane holding HD / 32 dimensions).
template <int HD>
__global__ void __launch_bounds__(kWarp) attention_decode_merge_kernel(const AttentionParams p) {
  launch_dependents();
  grid_dependency_wait();
  constexpr int kPer = HD / kWarp;
  const int lane = threadIdx.x;
  const int64_t h = blockIdx.x;
  const int64_t t = p.decode_tokens != nullptr ? p.decode_tokens[blockIdx.y] : blockIdx.y;
  const float* st = p.split_scratch + (static_cast<int64_t>(blockIdx.y) * p.n_head + h) * p.n_split * (HD + kSplitExtra);
  float m = -INFINITY;
  for (int64_t z = 0; z < p.n_split; ++z) m = fmaxf(m, st[z * (HD + kSplitExtra) + HD]);
  float l = 0.0f, out[kPer];
#pragma unroll
  for (int i = 0; i < kPer; ++i) out[i] = 0.0f;
  if (m != -INFINITY) {
    for (int64_t z = 0; z < p.n_split; ++z) {
      const float* sz = st + z * (HD + kSplitExtra);
      const float c = sz[HD] == -INFINITY ? 0.0f : expf(sz[HD] - m);
      l += sz[HD + 1] * c;
#pragma unroll
      for (int i = 0; i < kPer; ++i) out[i] = __fmaf_rn(sz[lane * kPer + i], c, out[i]);
    }
  }
  const float inv = softmax_out_scale(m, l, p.sinks, h);
#pragma unroll
  for (int i = 0; i < kPer; ++i) out[i] *= inv;
  write_out(p, (t * p.n_head + h) * HD + lane * kPer, out);
}

template <int HD>
void launch(const AttentionParams& p, cudaStream_t s) {
  const int64_t rows = p.decode_tokens != nullptr ? p.n_decode_tokens : p.n_tokens;
  if (rows > 65535 || p.n_head > 0x7FFFFFFF) throw InvalidArgument("GPU attention: too many tokens or heads");
  const int64_t n_split = p.split_scratch != nullptr ? std::max<int64_t>(p.n_split, 1) : 1;
  if (n_split > kMaxSplits) throw InvalidArgument("GPU attention: too many splits of the decode kernel");
  const dim3 grid(static_cast<unsigned>(p.n_head), static_cast<unsigned>(rows), static_cast<unsigned>(n_split));
  const bool pdl = pdl_chain_enabled();
  AttentionParams ps = p;
  ps.n_split = n_split;
  const int64_t shape_rows = p.shape_rows > 0 ? p.shape_rows : static_cast<int64_t>(grid.y);
  switch (warps_per_block(static_cast<int64_t>(grid.x) * shape_rows * grid.z)) {
    case 4: launch_split<HD, 4>(ps, grid, pdl, s); break;
    case 8: launch_split<HD, 8>(ps, grid, pdl, s); break;
    default: launch_split<HD, 16>(ps, grid, pdl, s); break;
  }
  if (n_split > 1) {
    launch_kernel(attention_decode_merge_kernel<HD>, dim3(grid.x, grid.y), dim3(kWarp), 0, s, pdl, ps);
  }
}

template <int HD, int W>
void launch_split(const AttentionParams& p, dim3 grid, bool pdl, cudaStream_t s) {
  using T = TensorType;
  const dim3 threads(W * kWarp);
  if (!attention_typed(p)) {
    launch_kernel(attention_decode_kernel<HD, T::F16, T::F16, W>, grid, threads, 0, s, pdl, p);
    return;
  }
  // The common pairs with their reads compiled in; the others choose per read.
  const AttentionParams tp = attention_typed_rows(p);
  if (p.k_type == T::Q8_0 && p.v_type == T::Q8_0) {
    launch_kernel(attention_decode_kernel<HD, T::Q8_0, T::Q8_0, W>, grid, threads, 0, s, pdl, tp);
  } else if (p.k_type == T::Q4_0 && p.v_type == T::Q4_0) {
    launch_kernel(attention_decode_kernel<HD, T::Q4_0, T::Q4_0, W>, grid, threads, 0, s, pdl, tp);
  } else {
    launch_kernel(attention_decode_kernel<HD, kAnyKvType, kAnyKvType, W>, grid, threads, 0, s, pdl, tp);
  }
}

}  // namespace

bool attention_decode_supports(const AttentionParams& p) {
  return (p.head_dim == 64 || p.head_dim == 128) && p.n_head_kv > 0 && p.n_head % p.n_head_kv == 0 &&
         reinterpret_cast<uintptr_t>(p.k) % 8 == 0 && reinterpret_cast<uintptr_t>(p.v) % 8 == 0;
}

int64_t attention_decode_splits(int64_t rows, int64_t n_head, int64_t max_len) {
  const int sms = sm_count();
  const int64_t blocks = std::max<int64_t>(rows * n_head, 1);
  const int64_t want = (static_cast<int64_t>(kBlocksPerSm) * sms + blocks - 1) / blocks;
  return std::clamp<int64_t>(std::min(want, max_len / kMinSplitCells), 1, kMaxSplits);
}

int64_t attention_decode_scratch_floats(int64_t rows, int64_t n_head, int64_t head_dim, int64_t n_split) {
  return n_split > 1 ? rows * n_head * n_split * (head_dim + kSplitExtra) : 0;
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
