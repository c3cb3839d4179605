// Tiled attention for prefill (flash-attention style, online softmax): a
// block takes kQTile queries of one head and walks the cache in tiles of
// kKTile cells; each K and V tile is read from memory once per block of
// queries (into shared memory as f32) instead of once per query, and tiles
// that the mask hides from every query of the block are skipped (causal
// prefill does about half the work; with per-token ranges a block walks the
// union of its queries' ranges). Four lanes share a query: each scores
// kKTile / 4 cells and accumulates head_dim / 4 output dimensions.
// Arithmetic: q rounded as the CPU rounds it for the K type (kv_round_q:
// f16, bf16, or kept for f32 K); scores, the running max and
// sum, and the output in f32; probabilities stay f32 (the CPU rounds them
// to f16), so results differ from cpu/attention/attention.cpp within f16 rounding.
// A cache of a block type (Typed) is dequantized while a tile is loaded into
// shared memory (kv_blocks.cuh), unrounded f32 (the CPU rounds to f16).
#include <cuda_fp16.h>

#include "core/error.h"
#include "cpu/attention/alibi.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kv_blocks.cuh"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

constexpr int kQTile = static_cast<int>(kAttentionQTile);  // queries per block
constexpr int kKTile = 32;                           // cells per step
constexpr int kLanesPerQuery = 4;
constexpr int kThreads = kQTile * kLanesPerQuery;    // 128
constexpr int kCellsPerLane = kKTile / kLanesPerQuery;
constexpr int kPad = 4;                              // floats after each Q/K row (no bank conflicts)
constexpr int kVec = 4;                              // floats per 16-byte access

template <int HD>
constexpr size_t smem_bytes() {
  return sizeof(float) * (static_cast<size_t>(kQTile) * (HD + kPad) + static_cast<size_t>(kKTile) * (HD + kPad) +
                          static_cast<size_t>(kKTile) * HD + static_cast<size_t>(kQTile) * (kKTile + 1));
}

__device__ __forceinline__ float dot4(float4 a, float4 b, float acc) {
  acc = __fmaf_rn(a.x, b.x, acc);
  acc = __fmaf_rn(a.y, b.y, acc);
  acc = __fmaf_rn(a.z, b.z, acc);
  return __fmaf_rn(a.w, b.w, acc);
}

__device__ __forceinline__ float4 load_half4(const half* p) {
  const uint2 raw = *reinterpret_cast<const uint2*>(p);
  const float2 a = __half22float2(*reinterpret_cast<const half2*>(&raw.x));
  const float2 b = __half22float2(*reinterpret_cast<const half2*>(&raw.y));
  return make_float4(a.x, a.y, b.x, b.y);
}


// KT, VT: the K and V cache types (kv_blocks.cuh kv_read; kAnyKvType: p's,
// at run time). Typed: either is not f16 (rows of p.k_row_bytes / v_row_bytes).
template <int HD, TensorType KT, TensorType VT>
__global__ void __launch_bounds__(kThreads) attention_tiled_kernel(const AttentionParams p) {
  constexpr bool Typed = KT != TensorType::F16 || VT != TensorType::F16;
  constexpr int QS = HD + kPad;          // row stride of the Q and K tiles
  constexpr int kDimsPerLane = HD / kLanesPerQuery;
  constexpr int kVecs = HD / kVec;       // float4 per row
  extern __shared__ float4 smem4[];
  float* qs = reinterpret_cast<float*>(smem4);  // [kQTile][QS]
  float* ks = qs + kQTile * QS;                 // [kKTile][QS]
  float* vs = ks + kKTile * QS;                 // [kKTile][HD]
  float* ps = vs + kKTile * HD;                 // [kQTile][kKTile + 1]
  const int tid = threadIdx.x;
  const int r = tid / kLanesPerQuery, sub = tid % kLanesPerQuery;
  // This block's queries: tile blockIdx.x of the split, or of the whole pass.
  const int64_t h = blockIdx.y;
  const int64_t q0 = p.q_tiles != nullptr ? p.q_tiles[2 * blockIdx.x] : static_cast<int64_t>(blockIdx.x) * kQTile;
  const int64_t q_end = p.q_tiles != nullptr ? q0 + p.q_tiles[2 * blockIdx.x + 1] : p.n_tokens;
  const int64_t g = h / (p.n_head / p.n_head_kv);
  const int64_t kv_stride = p.n_head_kv * HD, n_kv = p.n_kv;
  const int64_t t = q0 + r;
  const bool row_live = t < q_end;
  const half* k_head = reinterpret_cast<const half*>(p.k) + g * HD;
  const half* v_head = reinterpret_cast<const half*>(p.v) + g * HD;

  for (int i = tid; i < kQTile * kVecs; i += kThreads) {
    const int rr = i / kVecs, d4 = i % kVecs;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (q0 + rr < q_end) {
      v = reinterpret_cast<const float4*>(p.q + ((q0 + rr) * p.n_head + h) * HD)[d4];
      v = make_float4(kv_round_q(p.k_type, v.x), kv_round_q(p.k_type, v.y), kv_round_q(p.k_type, v.z),
                      kv_round_q(p.k_type, v.w));
    }
    reinterpret_cast<float4*>(qs + rr * QS)[d4] = v;
  }

  float acc[kDimsPerLane];
#pragma unroll
  for (int i = 0; i < kDimsPerLane; ++i) acc[i] = 0.0f;
  float m_run = -INFINITY, l_run = 0.0f;
  // This query's cells [first, first + len); the block walks the union of its queries' ranges.
  const bool ranges = p.kv_begin != nullptr;
  const int64_t first = row_live && ranges ? p.kv_begin[t] : 0;
  const int64_t len = !row_live ? 0 : ranges ? p.kv_len[t] : n_kv;
  const float* mask_row = p.mask + (row_live ? t : 0) * (ranges ? p.mask_stride : n_kv);
  const float slope = cpu::alibi_slope(h, p.n_head, p.max_alibi_bias);  // 1 without ALiBi
  __shared__ int64_t block_lo, block_hi;
  if (tid == 0) {
    block_lo = n_kv;
    block_hi = 0;
  }
  __syncthreads();
  if (sub == 0 && len > 0) {
    atomicMin(reinterpret_cast<unsigned long long*>(&block_lo), static_cast<unsigned long long>(first));
    atomicMax(reinterpret_cast<unsigned long long*>(&block_hi), static_cast<unsigned long long>(first + len));
  }
  __syncthreads();
  const int64_t lo = block_lo, hi = block_hi;

  for (int64_t j0 = lo; j0 < hi; j0 += kKTile) {
    // This lane's cells are j0 + sub + 4 jj.
    float mk[kCellsPerLane];
    bool any = false;
#pragma unroll
    for (int jj = 0; jj < kCellsPerLane; ++jj) {
      const int64_t j = j0 + sub + kLanesPerQuery * jj;
      mk[jj] = j >= first && j < first + len ? mask_row[j - first] : -INFINITY;
      any = any || mk[jj] != -INFINITY;
    }
    if (!__syncthreads_or(any)) continue;  // hidden from every query of the block

    for (int i = tid; i < kKTile * kVecs; i += kThreads) {
      const int cc = i / kVecs, d4 = i % kVecs;
      const int64_t j = j0 + cc;
      float4 kv = make_float4(0.0f, 0.0f, 0.0f, 0.0f), vv = kv;
      if (j < hi) {
        if constexpr (Typed) {
          const int e = static_cast<int>(g * HD + d4 * kVec);
          float kt[kVec], vt[kVec];
          kv_read<KT, kVec>(p.k_type, static_cast<const uint8_t*>(p.k) + j * p.k_row_bytes, e, kt);
          kv_read<VT, kVec>(p.v_type, static_cast<const uint8_t*>(p.v) + j * p.v_row_bytes, e, vt);
          kv = make_float4(kt[0], kt[1], kt[2], kt[3]);
          vv = make_float4(vt[0], vt[1], vt[2], vt[3]);
        } else {
          kv = load_half4(k_head + j * kv_stride + d4 * kVec);
          vv = load_half4(v_head + j * kv_stride + d4 * kVec);
        }
      }
      reinterpret_cast<float4*>(ks + cc * QS)[d4] = kv;
      reinterpret_cast<float4*>(vs + cc * HD)[d4] = vv;
    }
    __syncthreads();

    float s[kCellsPerLane];
#pragma unroll
    for (int jj = 0; jj < kCellsPerLane; ++jj) s[jj] = 0.0f;
#pragma unroll 4
    for (int d4 = 0; d4 < kVecs; ++d4) {
      const float4 qv = reinterpret_cast<const float4*>(qs + r * QS)[d4];
#pragma unroll
      for (int jj = 0; jj < kCellsPerLane; ++jj) {
        s[jj] = dot4(qv, reinterpret_cast<const float4*>(ks + (sub + kLanesPerQuery * jj) * QS)[d4], s[jj]);
      }
    }
    float tile_max = -INFINITY;
#pragma unroll
    for (int jj = 0; jj < kCellsPerLane; ++jj) {
      float v = s[jj] * p.scale;
      if (p.softcap > 0.0f) v = tanhf(v / p.softcap) * p.softcap;
      s[jj] = mk[jj] == -INFINITY ? -INFINITY : v + slope * mk[jj];
      tile_max = fmaxf(tile_max, s[jj]);
    }
#pragma unroll
    for (int o = 1; o < kLanesPerQuery; o <<= 1) tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullMask, tile_max, o));
    const float m_new = fmaxf(m_run, tile_max);
    float sum = 0.0f;
#pragma unroll
    for (int jj = 0; jj < kCellsPerLane; ++jj) {
      const float pj = s[jj] == -INFINITY ? 0.0f : expf(s[jj] - m_new);
      sum += pj;
      ps[r * (kKTile + 1) + sub + kLanesPerQuery * jj] = pj;
    }
#pragma unroll
    for (int o = 1; o < kLanesPerQuery; o <<= 1) sum += __shfl_xor_sync(kFullMask, sum, o);
    const float corr = m_run == -INFINITY ? 0.0f : expf(m_run - m_new);
    l_run = l_run * corr + sum;
    m_run = m_new;
#pragma unroll
    for (int i = 0; i < kDimsPerLane; ++i) acc[i] *= corr;
    __syncwarp();  // a query's four lanes share one warp

    // acc[4 i + e] is dimension 16 i + 4 sub + e.
    for (int c = 0; c < kKTile; ++c) {
      const float pc = ps[r * (kKTile + 1) + c];
#pragma unroll
      for (int i = 0; i < kDimsPerLane / kVec; ++i) {
        const float4 v = reinterpret_cast<const float4*>(vs + c * HD)[i * kLanesPerQuery + sub];
        acc[kVec * i + 0] = __fmaf_rn(pc, v.x, acc[kVec * i + 0]);
        acc[kVec * i + 1] = __fmaf_rn(pc, v.y, acc[kVec * i + 1]);
        acc[kVec * i + 2] = __fmaf_rn(pc, v.z, acc[kVec * i + 2]);
        acc[kVec * i + 3] = __fmaf_rn(pc, v.w, acc[kVec * i + 3]);
      }
    }
    __syncthreads();  // the next tile overwrites ks and vs
  }

  if (!row_live) return;
  const float inv = softmax_out_scale(m_run, l_run, p.sinks, h);  // every cell hidden: zeros, as the CPU
  float4* out = reinterpret_cast<float4*>(p.out + (t * p.n_head + h) * HD);
#pragma unroll
  for (int i = 0; i < kDimsPerLane / kVec; ++i) {
    out[i * kLanesPerQuery + sub] = make_float4(acc[kVec * i] * inv, acc[kVec * i + 1] * inv,
                                                acc[kVec * i + 2] * inv, acc[kVec * i + 3] * inv);
  }
}

template <int HD, TensorType KT, TensorType VT>
void launch(const AttentionParams& p, cudaStream_t s) {
  constexpr bool Typed = KT != TensorType::F16 || VT != TensorType::F16;
  constexpr size_t bytes = smem_bytes<HD>();
  static const bool configured = [] {
    FERRITE_CUDA_CHECK(cudaFuncSetAttribute(attention_tiled_kernel<HD, KT, VT>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    return true;
  }();
  (void)configured;
  const int64_t q_tiles = p.q_tiles != nullptr ? p.n_q_tiles : (p.n_tokens + kQTile - 1) / kQTile;
  if (q_tiles > 0x7FFFFFFF || p.n_head > 65535) throw InvalidArgument("GPU attention: too many tokens or heads");
  attention_tiled_kernel<HD, KT, VT><<<dim3(static_cast<unsigned>(q_tiles), static_cast<unsigned>(p.n_head)),
                                       kThreads, bytes, s>>>(Typed ? attention_typed_rows(p) : p);
  FERRITE_CUDA_LAUNCHED();
}

template <int HD>
void launch_any(const AttentionParams& p, cudaStream_t s) {
  using T = TensorType;
  if (!attention_typed(p)) {
    launch<HD, T::F16, T::F16>(p, s);
  } else if (p.k_type == T::Q8_0 && p.v_type == T::Q8_0) {  // the common pairs with their reads compiled in
    launch<HD, T::Q8_0, T::Q8_0>(p, s);
  } else if (p.k_type == T::Q4_0 && p.v_type == T::Q4_0) {
    launch<HD, T::Q4_0, T::Q4_0>(p, s);
  } else {
    launch<HD, kAnyKvType, kAnyKvType>(p, s);
  }
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

}  // namespace

bool attention_tiled_supports(const AttentionParams& p) {
  return (p.head_dim == 64 || p.head_dim == 128) && p.n_head_kv > 0 && p.n_head % p.n_head_kv == 0 &&
         aligned16(p.q) && aligned16(p.out) && reinterpret_cast<uintptr_t>(p.k) % 8 == 0 &&
         reinterpret_cast<uintptr_t>(p.v) % 8 == 0;
}

void attention_tiled(const AttentionParams& p, cudaStream_t s) {
  if (p.n_tokens == 0 || p.n_head == 0 || (p.q_tiles != nullptr && p.n_q_tiles == 0)) return;
  if (!attention_tiled_supports(p)) throw InvalidArgument("GPU attention: shape not supported by the tiled kernel");
  if (p.head_dim == 64) {
    launch_any<64>(p, s);
  } else {
    launch_any<128>(p, s);
  }
}

}  // namespace ferrite::cuda
