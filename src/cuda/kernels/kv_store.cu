// Writing K and V rows into a cache of any GPU cache type (ops.h
// store_kv_typed): a warp per 32-value block of a row quantizes it with the
// bits of the CPU's sequential quantizer (model/kv_quant.cpp; the scale's
// extreme values found by warp reductions that keep the CPU's choice among
// ties), or converts it to f16 / bf16 (or copies it) for an f16, bf16 or f32
// cache.
#include <string>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/kv_blocks.cuh"
#include "cuda/kernels/ops.h"
#include "cuda/kernels/pdl.cuh"

namespace ferrite::cuda {
namespace {

constexpr int kThreads = 128;

// Lane j of the warp holds (v, idx) = (value, index) j; afterwards every
// lane holds the pair `first` picks over the warp (ties: the smaller index,
// as a sequential scan that replaces only on a strict improvement).
template <typename Better>
__device__ __forceinline__ void warp_pick(float& v, int& idx, Better better) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(kFullMask, v, o);
    const int oi = __shfl_xor_sync(kFullMask, idx, o);
    if (better(ov, v) || (!better(v, ov) && oi < idx)) {
      v = ov;
      idx = oi;
    }
  }
}

// The block's quantized value of this lane (lane j: value j, x), and its
// scale (and minimum), as model/kv_quant.cpp computes them sequentially.
// Symmetric: x = d (q - offset) with d from the first value of largest
// magnitude (0 when all are 0: the CPU's m stays +0).
__device__ __forceinline__ int lane_symmetric(float x, int lane, int offset, float* d_out) {
  float a = fabsf(x);
  int idx = lane;
  warp_pick(a, idx, [](float u, float w) { return u > w; });
  const float m = a > 0.0f ? __shfl_sync(kFullMask, x, idx) : 0.0f;
  const float d = __fdiv_rn(m, static_cast<float>(-offset));
  const float id = d != 0.0f ? __frcp_rn(d) : 0.0f;
  const float v = __fadd_rn(__fadd_rn(__fmul_rn(x, id), static_cast<float>(offset)), 0.5f);
  *d_out = d;
  return min(2 * offset - 1, static_cast<int>(static_cast<int8_t>(__float2int_rz(v))));
}

// Affine: x = d q + lo over [lo, hi] (the first minimum and maximum, as std::min / std::max keep them).
__device__ __forceinline__ int lane_affine(float x, int lane, int qmax, float* d_out, float* lo_out) {
  float lo = x, hi = x;
  int ilo = lane, ihi = lane;
  warp_pick(lo, ilo, [](float u, float w) { return u < w; });
  warp_pick(hi, ihi, [](float u, float w) { return u > w; });
  const float d = __fdiv_rn(__fsub_rn(hi, lo), static_cast<float>(qmax));
  const float id = d != 0.0f ? __frcp_rn(d) : 0.0f;
  const float v = __fadd_rn(__fmul_rn(__fsub_rn(x, lo), id), 0.5f);
  *d_out = d;
  *lo_out = lo;
  return min(qmax, static_cast<int>(static_cast<int8_t>(__float2int_rz(v))));
}

// Lanes 0..15 write qs[j] = q_j | q_{j+16} << 4.
__device__ __forceinline__ void lane_nibbles(int q, int lane, uint8_t* qs) {
  const int hi = __shfl_down_sync(kFullMask, q, kKvHalfBlock);
  if (lane < kKvHalfBlock) qs[lane] = static_cast<uint8_t>((q & 0xF) | ((hi & 0xF) << 4));
}

// qh: bit j = the fifth bit of q_j.
__device__ __forceinline__ void lane_fifth(int q, int lane, uint8_t* qh) {
  const uint32_t bits = __ballot_sync(kFullMask, (q >> 4) & 1);
  if (lane < 4) qh[lane] = static_cast<uint8_t>(bits >> (8 * lane));
}

// A warp per 32-value block: warp i takes block i % nb of token
// (i / nb) / 2's K (even) or V (odd) row, lane j its value j.
__global__ void __launch_bounds__(kThreads) store_kv_typed_kernel(const float* k, const float* v,
                                                                  const int32_t* slots, int64_t n_tokens,
                                                                  int64_t n_embd_kv, KvCacheRef kc, KvCacheRef vc) {
  launch_dependents();
  grid_dependency_wait();  // launched with pdl (pdl.cuh)
  const int64_t nb = (n_embd_kv + kKvBlock - 1) / kKvBlock;  // (float types: the last run may be partial)
  const int64_t w = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  if (w >= 2 * n_tokens * nb) return;  // whole warps leave together
  const int64_t b = w % nb, row = w / nb, t = row / 2;
  const bool is_v = row % 2 != 0;
  const KvCacheRef& c = is_v ? vc : kc;
  const int64_t e = b * kKvBlock + lane;
  const float x = e < n_embd_kv ? (is_v ? v : k)[t * n_embd_kv + e] : 0.0f;
  uint8_t* dst = static_cast<uint8_t*>(c.data) + static_cast<int64_t>(slots[t]) * c.row_bytes;
  float d = 0.0f, lo = 0.0f;
  switch (c.type) {
    case TensorType::Q8_0: {
      float amax = fabsf(x);
#pragma unroll
      for (int o = kWarp / 2; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, o));
      d = __fdiv_rn(amax, 127.0f);
      const float id = d != 0.0f ? __frcp_rn(d) : 0.0f;
      uint8_t* blk = dst + b * kQ8_0Bytes;
      blk[2 + lane] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(roundf(__fmul_rn(x, id)))));
      if (lane == 0) kv_put_half(blk, d);
      return;
    }
    case TensorType::Q4_0: {
      const int q = lane_symmetric(x, lane, 8, &d);
      uint8_t* blk = dst + b * kQ4_0Bytes;
      lane_nibbles(q, lane, blk + 2);
      if (lane == 0) kv_put_half(blk, d);
      return;
    }
    case TensorType::Q5_0: {
      const int q = lane_symmetric(x, lane, 16, &d);
      uint8_t* blk = dst + b * kQ5_0Bytes;
      lane_fifth(q, lane, blk + 2);
      lane_nibbles(q, lane, blk + 6);
      if (lane == 0) kv_put_half(blk, d);
      return;
    }
    case TensorType::Q4_1: {
      const int q = lane_affine(x, lane, 15, &d, &lo);
      uint8_t* blk = dst + b * kQ4_1Bytes;
      lane_nibbles(q, lane, blk + 4);
      if (lane == 0) {
        kv_put_half(blk, d);
        kv_put_half(blk + 2, lo);
      }
      return;
    }
    case TensorType::Q5_1: {
      const int q = lane_affine(x, lane, 31, &d, &lo);
      uint8_t* blk = dst + b * kQ5_1Bytes;
      lane_fifth(q, lane, blk + 4);
      lane_nibbles(q, lane, blk + 8);
      if (lane == 0) {
        kv_put_half(blk, d);
        kv_put_half(blk + 2, lo);
      }
      return;
    }
    case TensorType::F32:
      if (e < n_embd_kv) reinterpret_cast<float*>(dst)[e] = x;
      return;
    case TensorType::BF16:
      if (e < n_embd_kv) reinterpret_cast<unsigned short*>(dst)[e] = kv_bf16_bits(x);
      return;
    default:  // F16
      if (e < n_embd_kv) reinterpret_cast<half*>(dst)[e] = __float2half_rn(x);
      return;
  }
}

}  // namespace

bool kv_cache_gpu_supported(TensorType t) { return kv_float_bytes(t) != 0 || kv_block_bytes(t) != 0; }

const char* kv_cache_gpu_type_names() { return "f16, f32, bf16, q8_0, q4_0, q4_1, q5_0, q5_1"; }

int64_t kv_cache_row_bytes(TensorType t, int64_t n) {
  if (kv_float_bytes(t) != 0) return n * kv_float_bytes(t);
  const int64_t bb = kv_block_bytes(t);
  if (bb == 0) {
    throw InvalidArgument(std::string("GPU KV cache: type ") + tensor_type_name(t) + " is not supported (" +
                          kv_cache_gpu_type_names() + ")");
  }
  if (n % kKvBlock != 0) {
    throw InvalidArgument("GPU KV cache: a " + tensor_type_name(t) + " row needs a multiple of 32 values, not " +
                          std::to_string(n));
  }
  return n / kKvBlock * bb;
}

AttentionParams attention_typed_rows(const AttentionParams& p) {
  AttentionParams r = p;
  const int64_t width = p.n_head_kv * p.head_dim;
  const int64_t k_bytes = kv_cache_row_bytes(p.k_type, width), v_bytes = kv_cache_row_bytes(p.v_type, width);
  if (p.k_type == TensorType::F16) r.k_row_bytes = k_bytes;
  if (p.v_type == TensorType::F16) r.v_row_bytes = v_bytes;
  if (r.k_row_bytes != k_bytes || r.v_row_bytes != v_bytes) {
    throw InvalidArgument("GPU attention: cache row bytes do not match the cache types and width");
  }
  return r;
}

void store_kv_typed(const float* k, const float* v, const int32_t* slots, int64_t n_tokens, int64_t n_embd_kv,
                    const KvCacheRef& k_cache, const KvCacheRef& v_cache, cudaStream_t s) {
  if (n_tokens <= 0) return;
  for (const KvCacheRef* c : {&k_cache, &v_cache}) {
    if (c->row_bytes != kv_cache_row_bytes(c->type, n_embd_kv)) {
      throw InvalidArgument("GPU KV cache: row bytes do not match the type and width");
    }
  }
  const int64_t threads = 2 * n_tokens * ((n_embd_kv + kKvBlock - 1) / kKvBlock) * kWarp;
  const int64_t blocks = (threads + kThreads - 1) / kThreads;
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("GPU KV cache: too many rows in one store");
  launch_kernel(store_kv_typed_kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, s,
                pdl_chain_enabled(), k, v, slots, n_tokens, n_embd_kv, k_cache, v_cache);
}

}  // namespace ferrite::cuda
