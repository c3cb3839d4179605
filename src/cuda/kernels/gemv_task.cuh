// Shared pieces of the quantized GEMV (gemv_quant.cu): constants, the staged
// activation row, weight-row pointers, and the Task template whose
// specializations hold each weight type's loads and dot product
// (gemv_quant.cu: Q4_0, Q8_0, Q4_K, Q6_K; gemv_tasks_more.cuh: the others).
// Included by gemv_quant.cu only.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/gpu_matrix.h"

namespace ferrite::cuda::gemv {

constexpr int kChunk = 32;                 // elements per 8-bit activation block
constexpr int kUnit = 16;                  // bytes per staged activation unit
constexpr int kUnitGroup = 4;              // the swizzle permutes units within groups of 4
constexpr int kGemvWarps = 8;              // weight rows per block (one per warp)
constexpr int kGemvThreads = kGemvWarps * kWarp;

constexpr int kSbElems = 256;              // K-quant super-block
constexpr int kQ4KBytes = 144;             // d, dmin (f16), 12 scale bytes, 128 quant bytes
constexpr int kQ6KBytes = 210;             // ql[128], qh[64], scales[16] (int8), d (f16)
constexpr int kQ6KScales = 192, kQ6KD = 208;
constexpr int kDefaultSmem = 48 * 1024;    // dynamic shared memory without opting in
// Staged activations may take this much shared memory (m = 4, k = 11008: 55 KiB).
constexpr int kMaxStageBytes = 100 * 1024;
constexpr uint32_t kLow4 = 0x0F0F0F0Fu, kLow2 = 0x03030303u;

__device__ __forceinline__ uint32_t load_u16(const void* p) {
  return __ldg(static_cast<const unsigned short*>(p));
}

__device__ __forceinline__ float f16_bits(uint32_t h) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h)));
}

// The staged activations of one row: 16-byte units (swizzled), d, sums and
// (Q8_1) s per 32.
struct ActRow {
  const int4* units;
  const float* d;
  const int32_t* sums;
  const float* s;
  __device__ __forceinline__ int4 unit(int v) const { return units[v ^ ((v >> 3) & 3)]; }
};

// Where one weight row's bytes start: quants (or blocks) and, for the
// repacked 32-element types, scales and (Q5_0/Q5_1) fifth bits.
struct RowPtr {
  const uint8_t* q;
  const uint16_t* s;
  const uint32_t* h = nullptr;
};

__device__ __forceinline__ int dot4(const int (&w)[4], const int4& a, int s) {
  s = __dp4a(w[0], a.x, s);
  s = __dp4a(w[1], a.y, s);
  s = __dp4a(w[2], a.z, s);
  return __dp4a(w[3], a.w, s);
}

// Bytes v (each 0..63) minus 32, as int8: with bit 7 set no byte borrows
// from its neighbour, and flipping bit 7 back gives the two's complement.
__device__ __forceinline__ int minus32(uint32_t v) {
  return static_cast<int>(((v | 0x80808080u) - 0x20202020u) ^ 0x80808080u);
}

// The 32 bytes at offset s (even, 0..14) of a 48-byte window.
__device__ __forceinline__ void window32(const int4 (&v)[3], int s, uint32_t (&out)[8]) {
  const uint32_t w[12] = {static_cast<uint32_t>(v[0].x), static_cast<uint32_t>(v[0].y), static_cast<uint32_t>(v[0].z),
                          static_cast<uint32_t>(v[0].w), static_cast<uint32_t>(v[1].x), static_cast<uint32_t>(v[1].y),
                          static_cast<uint32_t>(v[1].z), static_cast<uint32_t>(v[1].w), static_cast<uint32_t>(v[2].x),
                          static_cast<uint32_t>(v[2].y), static_cast<uint32_t>(v[2].z), static_cast<uint32_t>(v[2].w)};
  const int q = s >> 2;           // whole words
  const int r = (s & 3) * 8;      // bits within a word: 0 or 16
  uint32_t u[10], t[9];
#pragma unroll
  for (int i = 0; i < 10; ++i) u[i] = (q & 2) ? w[i + 2] : w[i];
#pragma unroll
  for (int i = 0; i < 9; ++i) t[i] = (q & 1) ? u[i + 1] : u[i];
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = __funnelshift_r(t[i], t[i + 1], r);
}

// Blocks per SM the registers of the kernels for 2..4 activation rows must
// allow (at most 80 registers a thread; Q6_K: 2, at most 128).
constexpr int kMinBlocksMulti = 3;

template <TensorType T>
struct Task;

// Q4_K/Q5_K scale and min of sub-block j (0..7) from the 12 packed bytes
// s0|s1|s2. Both forms are computed and one selected: lanes of a warp take both.
__device__ __forceinline__ void k_scale_min(int j, uint32_t s0, uint32_t s1, uint32_t s2, int& sc, int& m) {
  const int sh = 8 * (j & 3);
  const uint32_t b0 = s0 >> sh, b1 = s1 >> sh, b2 = s2 >> sh;
  const bool low = j < 4;
  sc = static_cast<int>(low ? b0 & 63 : (b2 & 0xF) | ((b0 >> 6 & 3) << 4));
  m = static_cast<int>(low ? b1 & 63 : (b2 >> 4 & 0xF) | ((b1 >> 6 & 3) << 4));
}

// The value of a Q4_K/Q5_K task: the integer sums s0, s1 of sub-blocks 2p and
// 2p + 1 against the activation chunks c, c + 1, times their 6-bit scales,
// less their mins times the chunks' sums; head = d|dmin, scales[12].
__device__ __forceinline__ float k_task_value(const int4& head, int p, int s0, int s1, const ActRow& a, int c) {
  int sc0, m0, sc1, m1;
  const auto s0w = static_cast<uint32_t>(head.y), s1w = static_cast<uint32_t>(head.z),
             s2w = static_cast<uint32_t>(head.w);
  k_scale_min(2 * p, s0w, s1w, s2w, sc0, m0);
  k_scale_min(2 * p + 1, s0w, s1w, s2w, sc1, m1);
  const int isum = sc0 * s0 + sc1 * s1;
  const int msum = m0 * a.sums[c] + m1 * a.sums[c + 1];
  const auto dm = static_cast<uint32_t>(head.x);
  return a.d[c] * (f16_bits(dm & 0xFFFF) * static_cast<float>(isum) - f16_bits(dm >> 16) * static_cast<float>(msum));
}

}  // namespace ferrite::cuda::gemv
