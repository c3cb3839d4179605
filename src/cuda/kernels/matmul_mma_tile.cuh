// The per-type pieces of matmul_mma.cu: the shared-memory stage layout, the
// asynchronous copies that fill a stage, and the products of one warp on a
// staged super-block (256 elements of k: 8 chunks of 32).
//
// Operand layout. mma.sync m16n8k32 (s8) gives lane (g, t) = (lane / 4,
// lane % 4) the k slots 4t..4t+3 (registers a0/a1, b0) and 16+4t..16+4t+3
// (a2/a3, b1). Any permutation of k applied to both operands leaves the dot
// product unchanged, so for Q4_0, Q8_0, Q4_K and Q5_K ("permuted") slot 4t+i holds
// element 8t+i of the chunk and slot 16+4t+i element 8t+4+i: each lane reads
// 8 consecutive bytes of a weight row and of a token row (one 64-bit shared
// load each). Q6_K keeps the plain layout (its scales cover 16 elements and
// take one m16n8k16 product each).
//
// Q5_K is Q4_K with the fifth bit of each value (qh bit j of byte l for
// element l of sub-block j) ORed into its nibble.
//
// Sums. Q4_K, Q5_K and Q6_K: the integer chunk sums times their integer sub-block
// scales are summed in int32 over the super-block (exact), then scaled once
// in f32 by the row's d and the token's d (Q8_K: one d per 256). Q4_K's min
// term sum_j m_j sum(a over chunk j) is a second product whose A operand is
// m_j repeated over the chunk, accumulated over the super-block. Q4_0/Q8_0
// (one f16 scale per chunk on both sides): per chunk in f32.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/gpu_matrix.h"

namespace ferrite::cuda::mma {

constexpr int kChunk = 32;             // elements per quant chunk
constexpr int kSbElems = 256;          // elements per stage (one K-quant super-block)
constexpr int kSbChunks = kSbElems / kChunk;
constexpr int kWarps = 4;              // warps per block
constexpr int kThreads = kWarps * kWarp;
constexpr int kWarpRows = 16;          // weight rows per warp (the mma's M)
constexpr int kBlockRows = kWarps * kWarpRows;
constexpr int kTokTile = 8;            // tokens per mma (the mma's N)
constexpr int kVec = 16;               // bytes per asynchronous copy
constexpr int kVecsPerSb = kSbElems / kVec;  // int8 activations of one token and stage
constexpr int kQ4KBytes = 144;         // d, dmin (f16), 12 scale bytes, 128 quant bytes
constexpr int kQ5KBytes = 176;         // d, dmin (f16), 12 scale bytes, qh[32], 128 quant bytes
constexpr int kQ5KQh = 16;             // offset of Q5_K's fifth bits
constexpr int kQ6KBytes = 210;         // ql[128], qh[64], scales[16] (int8), d (f16)
constexpr int kQ6KSpanVecs = 14;       // 16-byte vectors that cover a Q6_K super-block at an even offset
constexpr uint32_t kLowNibbles = 0x0F0F0F0Fu;
// Shared memory a block's stages may take (two blocks per SM).
constexpr int kStageBudget = 110 * 1024;

template <TensorType T>
struct Fmt {
  // Activation format Q8_K (else Q8_0).
  static constexpr bool kQ8K = T == TensorType::Q4_K || T == TensorType::Q5_K || T == TensorType::Q6_K;
  static constexpr bool kPermuted = T != TensorType::Q6_K;
  // Bytes per staged token row: 64-bit loads of 16 lanes (g 0..3 x t) hit
  // all 32 banks when rows are 8 words apart mod 32, 32-bit loads of 32
  // lanes when they are 4 apart.
  static constexpr int kActStride = kPermuted ? kSbElems + 32 : kSbElems + 16;
  static constexpr int kActScales = kQ8K ? 1 : kSbChunks;  // activation scales per token and stage ([tokens][n])
  // Bytes per staged weight row (quants; padded as above).
  static constexpr int kRowStride = T == TensorType::Q4_0   ? kSbChunks * 16 + 16
                                    : T == TensorType::Q8_0 ? kSbChunks * 32 + 32
                                    : T == TensorType::Q4_K ? kQ4KBytes + 16
                                    : T == TensorType::Q5_K ? kQ5KBytes + 48  // 56 words: rows 24 banks apart
                                                            : kQ6KSpanVecs * kVec;
  // Q4_0/Q8_0: the rows' 8 f16 chunk scales of the stage, stored apart.
  static constexpr int kRowScaleBytes = (T == TensorType::Q4_0 || T == TensorType::Q8_0) ? kSbChunks * 2 : 0;
};

// One stage: activations [tokens][kActStride] int8, their scales
// [tokens][kActScales] f32, weights [kBlockRows][kRowStride], weight scales
// [kBlockRows][8] f16.
template <TensorType T, int NT>
struct Stage {
  static constexpr int kTokens = NT * kTokTile;
  static constexpr int kAct = kTokens * Fmt<T>::kActStride;
  static constexpr int kActD = kTokens * Fmt<T>::kActScales * 4;
  static constexpr int kW = kBlockRows * Fmt<T>::kRowStride;
  static constexpr int kWs = kBlockRows * Fmt<T>::kRowScaleBytes;
  static constexpr int kBytes = kAct + kActD + kW + kWs;
  static constexpr int kCount = kStageBudget / kBytes < 2 ? 2 : kStageBudget / kBytes > 4 ? 4 : kStageBudget / kBytes;
  static_assert(kAct % 16 == 0 && kActD % 16 == 0 && kW % 16 == 0 && kBytes % 16 == 0, "16-byte aligned parts");
};

// What the kernel reads besides the weights.
struct Args {
  const int8_t* aq = nullptr;  // [m, k] activations
  const float* ad = nullptr;   // [m, k / 32] their scales
  int64_t m = 0;
  int64_t n_chunks = 0;        // k / 32
  int n_tok_blocks = 1;
  int n_splits = 1;            // blocks per tile along k
  int64_t sb_per_split = 0;    // super-blocks per split of k
  float* y = nullptr;          // [m, n]
  float* partials = nullptr;   // [n_splits, m, n] when n_splits > 1
  bool accumulate = false;
};

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes = kVec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
#endif
}

__device__ __forceinline__ void cp_async4(void* smem, const void* gmem) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem));
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

// s = A [16 x 32] · B [32 x 8] (int8; A row-major, B column-major).
__device__ __forceinline__ void mma_k32(int (&s)[4], const int (&a)[4], int b0, int b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
      : "=r"(s[0]), "=r"(s[1]), "=r"(s[2]), "=r"(s[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));
#endif
}

// c += A [16 x 32] · B [32 x 8].
__device__ __forceinline__ void mma_k32_acc(int (&c)[4], const int (&a)[4], int b0, int b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// s = A [16 x 16] · B [16 x 8].
__device__ __forceinline__ void mma_k16(int (&s)[4], int a0, int a1, int b0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%7,%7,%7};"
               : "=r"(s[0]), "=r"(s[1]), "=r"(s[2]), "=r"(s[3])
               : "r"(a0), "r"(a1), "r"(b0), "r"(0));
#endif
}

// float(v) for |v| < 2^22 without the conversion unit (a quarter of the
// FMA rate on sm_90): 1.5 * 2^23 + v has v in its low mantissa bits.
__device__ __forceinline__ float small_int_to_float(int v) {
  constexpr int kMagicBits = 0x4B400000;
  constexpr float kMagic = 12582912.0f;
  return __int_as_float(v + kMagicBits) - kMagic;
}

__device__ __forceinline__ uint2 lds64(const void* p) { return *static_cast<const uint2*>(p); }
__device__ __forceinline__ uint32_t lds32(const void* p) { return *static_cast<const uint32_t*>(p); }
// Four bytes at a 2-byte aligned address.
__device__ __forceinline__ uint32_t lds32_at2(const uint8_t* p) {
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
}
__device__ __forceinline__ int byte_of(uint32_t w, int i) { return static_cast<int>((w >> (8 * i)) & 0xFFu); }

// ---- staging ---------------------------------------------------------------

// The copies of one stage, spread over the block's threads: thread x issues
// copies x, x + kThreads, ... of each kind. Their source offsets (into the
// activations, their scales and the weights, for super-block 0; host checks
// keep them below 2^32) are computed once; a stage adds sb times the bytes
// per super-block. Rows and tokens past the end repeat the last one (their
// results are not stored).
template <TensorType T, int NT>
struct Stager {
  using F = Fmt<T>;
  using S = Stage<T, NT>;
  static constexpr bool kRepacked = T == TensorType::Q4_0 || T == TensorType::Q8_0;
  static constexpr int kChunkBytes = T == TensorType::Q4_0 ? 16 : 32;  // repacked quants per chunk
  static constexpr int kRowVecs = kRepacked ? kSbChunks * kChunkBytes / kVec
                                  : T == TensorType::Q4_K ? kQ4KBytes / kVec
                                  : T == TensorType::Q5_K ? kQ5KBytes / kVec
                                                          : kQ6KSpanVecs;
  static constexpr int kActVecs = S::kTokens * kVecsPerSb;
  static constexpr int kScaleCopies = F::kQ8K ? S::kTokens : S::kTokens * 2;  // 4-byte or 16-byte copies
  static constexpr int kWVecs = kBlockRows * kRowVecs;
  static constexpr int kActSlots = (kActVecs + kThreads - 1) / kThreads;
  static constexpr int kScaleSlots = (kScaleCopies + kThreads - 1) / kThreads;
  static constexpr int kWSlots = (kWVecs + kThreads - 1) / kThreads;
  static constexpr int kRowScaleSlots = kRepacked ? (kBlockRows + kThreads - 1) / kThreads : 0;
  static constexpr int64_t kWBytesPerSb = kRepacked ? kSbChunks * kChunkBytes
                                          : T == TensorType::Q4_K ? kQ4KBytes
                                          : T == TensorType::Q5_K ? kQ5KBytes
                                                                  : kQ6KBytes;

  uint32_t act[kActSlots];      // bytes into a.aq
  uint32_t scale[kScaleSlots];  // floats into a.ad
  uint32_t wq[kWSlots];         // bytes into w.data (Q6_K: of the row's start)
  uint32_t ws[kRowScaleSlots > 0 ? kRowScaleSlots : 1];  // f16 values into w.scales

  __device__ void init(const GpuMatrix& w, const Args& a, int64_t row0, int64_t tok0) {
#pragma unroll
    for (int k = 0; k < kActSlots; ++k) {
      const int i = threadIdx.x + k * kThreads;
      const int64_t tok = min(tok0 + i / kVecsPerSb, a.m - 1);
      act[k] = static_cast<uint32_t>(tok * w.k + (i % kVecsPerSb) * kVec);
    }
#pragma unroll
    for (int k = 0; k < kScaleSlots; ++k) {
      const int i = threadIdx.x + k * kThreads;
      if constexpr (F::kQ8K) {
        scale[k] = static_cast<uint32_t>(min(tok0 + i, a.m - 1) * a.n_chunks);
      } else {
        scale[k] = static_cast<uint32_t>(min(tok0 + i / 2, a.m - 1) * a.n_chunks + (i % 2) * 4);
      }
    }
#pragma unroll
    for (int k = 0; k < kWSlots; ++k) {
      const int i = threadIdx.x + k * kThreads;
      const int64_t row = min(row0 + i / kRowVecs, w.n - 1);
      if constexpr (kRepacked) {
        wq[k] = static_cast<uint32_t>(row * a.n_chunks * kChunkBytes + (i % kRowVecs) * kVec);
      } else if constexpr (T == TensorType::Q4_K || T == TensorType::Q5_K) {
        wq[k] = static_cast<uint32_t>(row * static_cast<int64_t>(w.row_bytes) + (i % kRowVecs) * kVec);
      } else {
        wq[k] = static_cast<uint32_t>(row * static_cast<int64_t>(w.row_bytes));
      }
    }
#pragma unroll
    for (int k = 0; k < kRowScaleSlots; ++k) {
      const int i = threadIdx.x + k * kThreads;
      ws[k] = static_cast<uint32_t>(min(row0 + i, w.n - 1) * a.n_chunks);
    }
  }

  // Issues the copies of super-block sb into stage s.
  __device__ void issue(uint8_t* s, const GpuMatrix& w, const Args& a, int64_t sb) const {
    uint8_t* s_act = s;
    uint8_t* s_ad = s + S::kAct;
    uint8_t* s_w = s_ad + S::kActD;
    uint8_t* s_ws = s_w + S::kW;
    const int8_t* aq = a.aq + sb * kSbElems;
#pragma unroll
    for (int k = 0; k < kActSlots; ++k) {
      const int i = threadIdx.x + k * kThreads;
      if (kActVecs % kThreads == 0 || i < kActVecs) {
        cp_async16(s_act + (i / kVecsPerSb) * F::kActStride + (i % kVecsPerSb) * kVec, aq + act[k]);
      }
    }
    const float* ad = a.ad + sb * kSbChunks;
#pragma unroll
    for (int k = 0; k < kScaleSlots; ++k) {
      const int i = threadIdx.x + k * kThreads;
      if (kScaleCopies % kThreads == 0 || i < kScaleCopies) {
        if constexpr (F::kQ8K) {
          cp_async4(s_ad + i * 4, ad + scale[k]);
        } else {
          cp_async16(s_ad + i * kVec, ad + scale[k]);
        }
      }
    }
    const uint8_t* wd = w.data + (T == TensorType::Q6_K ? sb * kQ6KBytes : sb * kWBytesPerSb);
#pragma unroll
    for (int k = 0; k < kWSlots; ++k) {
      const int i = threadIdx.x + k * kThreads;
      if (kWVecs % kThreads == 0 || i < kWVecs) {
        uint8_t* dst = s_w + (i / kRowVecs) * F::kRowStride + (i % kRowVecs) * kVec;
        if constexpr (T == TensorType::Q6_K) {
          // Q6_K super-blocks start at even offsets: copy the aligned vectors
          // that cover one (reading only its bytes; the rest is zeroed).
          const uint8_t* first = wd + wq[k];
          const uint8_t* aligned = first - (reinterpret_cast<uintptr_t>(first) & (kVec - 1));
          const uint8_t* src = aligned + (i % kRowVecs) * kVec;
          const int64_t left = (first + kQ6KBytes) - src;
          const int bytes = left <= 0 ? 0 : left >= kVec ? kVec : static_cast<int>(left);
          cp_async16(dst, bytes > 0 ? src : aligned, bytes);
        } else {
          cp_async16(dst, wd + wq[k]);
        }
      }
    }
    if constexpr (kRepacked) {
      const uint16_t* sc = w.scales + sb * kSbChunks;
#pragma unroll
      for (int k = 0; k < kRowScaleSlots; ++k) {
        const int i = threadIdx.x + k * kThreads;
        if (i < kBlockRows) cp_async16(s_ws + i * F::kRowScaleBytes, sc + ws[k]);
      }
    }
  }
};

// ---- products of one warp on a staged super-block --------------------------

// acc [NT][4]: lane (g, t)'s outputs, rows g and g + 8 of the warp's 16,
// tokens 2t and 2t + 1 of each 8-token tile (the mma's C layout).
template <TensorType T, int NT>
struct Warp {
  using F = Fmt<T>;
  using S = Stage<T, NT>;

  __device__ static void run(const uint8_t* s, const GpuMatrix& w, int64_t row_g, int64_t row_g8, int64_t sb,
                             float (&acc)[NT][4]) {
    const int lane = threadIdx.x % kWarp, g = lane / 4, t = lane % 4;
    const int wrow = (threadIdx.x / kWarp) * kWarpRows + g;  // staged row of g
    const uint8_t* s_act = s;
    const auto* s_ad = reinterpret_cast<const float*>(s + S::kAct);
    const uint8_t* s_w = s + S::kAct + S::kActD;
    const uint8_t* rows[2] = {s_w + wrow * F::kRowStride, s_w + (wrow + 8) * F::kRowStride};
    if constexpr (T == TensorType::Q4_K || T == TensorType::Q5_K) {
      q4_k(s_act, s_ad, rows, g, t, acc);
    } else if constexpr (T == TensorType::Q6_K) {
      // Each row's super-block sits at the offset its global address had in its 16-byte vector.
      const int64_t grow[2] = {row_g, row_g8};
      const uint8_t* blk[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint8_t* first = w.data + grow[h] * w.row_bytes + sb * kQ6KBytes;
        blk[h] = rows[h] + (reinterpret_cast<uintptr_t>(first) & (kVec - 1));
      }
      q6_k(s_act, s_ad, blk, g, t, acc);
    } else {
      const uint8_t* s_ws = s_w + S::kW;
      const uint4 sc[2] = {*reinterpret_cast<const uint4*>(s_ws + wrow * F::kRowScaleBytes),
                           *reinterpret_cast<const uint4*>(s_ws + (wrow + 8) * F::kRowScaleBytes)};
      q4_0_q8_0(s_act, s_ad, rows, sc, g, t, acc);
    }
  }

  // The 8 Q4_K (scale, min) pairs of a row as packed bytes: sc[0] = scales
  // 0..3, sc[1] = 4..7, mn likewise (6 bits each, from the 12 packed bytes).
  __device__ static void q4_k_scales(const uint4& h, uint32_t (&sc)[2], uint32_t (&mn)[2]) {
    constexpr uint32_t kLow6 = 0x3F3F3F3Fu, kTop2 = 0x03030303u;
    sc[0] = h.y & kLow6;
    mn[0] = h.z & kLow6;
    sc[1] = (h.w & kLowNibbles) | (((h.y >> 6) & kTop2) << 4);
    mn[1] = ((h.w >> 4) & kLowNibbles) | (((h.z >> 6) & kTop2) << 4);
  }

  // The staged token row of lane (g, ·) in tile nt of this warp.
  __device__ static const uint8_t* tok_row(const uint8_t* s_act, int nt, int g) {
    return s_act + (nt * kTokTile + g) * F::kActStride;
  }

  __device__ static void q4_k(const uint8_t* s_act, const float* s_ad, const uint8_t* const (&rows)[2], int g, int t,
                              float (&acc)[NT][4]) {
    uint32_t sc[2][2], mn[2][2];
    float d[2], dmin[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint4 hdr = *reinterpret_cast<const uint4*>(rows[h]);
      q4_k_scales(hdr, sc[h], mn[h]);
      const half2 dm = *reinterpret_cast<const half2*>(&hdr.x);
      d[h] = __low2float(dm);
      dmin[h] = __high2float(dm);
    }
    int isum[NT][4], imin[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) isum[nt][e] = imin[nt][e] = 0;
    }
    // Q5_K: the fifth bits of elements 8t .. 8t + 7 of every sub-block (bit j of byte l: sub-block j, element l).
    constexpr bool kQ5 = T == TensorType::Q5_K;
    constexpr int kQs = kQ5 ? kQ5KQh + 32 : 16;  // offset of the quants
    uint2 qh[2] = {make_uint2(0, 0), make_uint2(0, 0)};
    if constexpr (kQ5) {
      qh[0] = lds64(rows[0] + kQ5KQh + 8 * t);
      qh[1] = lds64(rows[1] + kQ5KQh + 8 * t);
    }
#pragma unroll
    for (int p = 0; p < kSbChunks / 2; ++p) {
      // Byte i of quant group p holds element i of chunk 2p (low nibble) and of chunk 2p + 1 (high).
      const uint2 q[2] = {lds64(rows[0] + kQs + 32 * p + 8 * t), lds64(rows[1] + kQs + 32 * p + 8 * t)};
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int j = 2 * p + half, sh = 4 * half;
        int a[4] = {static_cast<int>((q[0].x >> sh) & kLowNibbles), static_cast<int>((q[1].x >> sh) & kLowNibbles),
                    static_cast<int>((q[0].y >> sh) & kLowNibbles), static_cast<int>((q[1].y >> sh) & kLowNibbles)};
        if constexpr (kQ5) {
          constexpr uint32_t kOnes = 0x01010101u;
          a[0] |= static_cast<int>(((qh[0].x >> j) & kOnes) << 4);
          a[1] |= static_cast<int>(((qh[1].x >> j) & kOnes) << 4);
          a[2] |= static_cast<int>(((qh[0].y >> j) & kOnes) << 4);
          a[3] |= static_cast<int>(((qh[1].y >> j) & kOnes) << 4);
        }
        const int sc0 = byte_of(sc[0][j / 4], j % 4), sc1 = byte_of(sc[1][j / 4], j % 4);
        const int m0 = byte_of(mn[0][j / 4], j % 4) * 0x01010101, m1 = byte_of(mn[1][j / 4], j % 4) * 0x01010101;
        const int am[4] = {m0, m1, m0, m1};
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const uint2 b = lds64(tok_row(s_act, nt, g) + j * kChunk + 8 * t);
          int s4[4];
          mma_k32(s4, a, static_cast<int>(b.x), static_cast<int>(b.y));
          mma_k32_acc(imin[nt], am, static_cast<int>(b.x), static_cast<int>(b.y));
          isum[nt][0] += sc0 * s4[0];
          isum[nt][1] += sc0 * s4[1];
          isum[nt][2] += sc1 * s4[2];
          isum[nt][3] += sc1 * s4[3];
        }
      }
    }
    // |isum| <= 8 * 63 * 32 * 31 * 127 < 2^26 (a conversion); |imin| <= 8 * 63 * 32 * 127 < 2^22.
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const float2 da = *reinterpret_cast<const float2*>(s_ad + nt * kTokTile + 2 * t);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e / 2;
        const float v = d[h] * static_cast<float>(isum[nt][e]) - dmin[h] * small_int_to_float(imin[nt][e]);
        acc[nt][e] = fmaf((e & 1) ? da.y : da.x, v, acc[nt][e]);
      }
    }
  }

  __device__ static void q6_k(const uint8_t* s_act, const float* s_ad, const uint8_t* const (&blk)[2], int g, int t,
                              float (&acc)[NT][4]) {
    constexpr uint32_t kTwoBits = 0x03030303u, kBias = 0x20202020u;
    float d[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) d[h] = __half2float(*reinterpret_cast<const half*>(blk[h] + 208));
    int isum[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) isum[nt][e] = 0;
    }
#pragma unroll
    for (int hb = 0; hb < 2; ++hb) {  // the two 128-element halves of the super-block
      // Per row: ql bytes of quarters 0/2 (A) and 1/3 (B), elements 4t.. (lo) and 16+4t.. (hi); qh likewise.
      uint32_t qa[2][2], qb[2][2], qh[2][2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = blk[h] + 64 * hb + 4 * t;
        const uint8_t* qhp = blk[h] + 128 + 32 * hb + 4 * t;
        qa[h][0] = lds32_at2(ql);
        qa[h][1] = lds32_at2(ql + 16);
        qb[h][0] = lds32_at2(ql + 32);
        qb[h][1] = lds32_at2(ql + 48);
        qh[h][0] = lds32_at2(qhp);
        qh[h][1] = lds32_at2(qhp + 16);
      }
#pragma unroll
      for (int qtr = 0; qtr < 4; ++qtr) {
        const int j = 4 * hb + qtr, sl = 4 * (qtr / 2), shh = 2 * qtr;
        int lo[2], hi[2], s0[2], s1[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t* l = (qtr & 1) ? qb[h] : qa[h];
          lo[h] = static_cast<int>(__vsubss4(((l[0] >> sl) & kLowNibbles) | (((qh[h][0] >> shh) & kTwoBits) << 4), kBias));
          hi[h] = static_cast<int>(__vsubss4(((l[1] >> sl) & kLowNibbles) | (((qh[h][1] >> shh) & kTwoBits) << 4), kBias));
          const auto* scp = reinterpret_cast<const int8_t*>(blk[h] + 192 + 2 * j);
          s0[h] = scp[0];
          s1[h] = scp[1];
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const uint8_t* brow = tok_row(s_act, nt, g) + j * kChunk + 4 * t;
          int slo[4], shi[4];
          mma_k16(slo, lo[0], lo[1], static_cast<int>(lds32(brow)));
          mma_k16(shi, hi[0], hi[1], static_cast<int>(lds32(brow + 16)));
#pragma unroll
          for (int e = 0; e < 4; ++e) isum[nt][e] += s0[e / 2] * slo[e] + s1[e / 2] * shi[e];
        }
      }
    }
    // |isum| <= 16 * 128 * 16 * 32 * 127 < 2^28 (a conversion).
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const float2 da = *reinterpret_cast<const float2*>(s_ad + nt * kTokTile + 2 * t);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        acc[nt][e] = fmaf(((e & 1) ? da.y : da.x) * d[e / 2], static_cast<float>(isum[nt][e]), acc[nt][e]);
      }
    }
  }

  __device__ static void q4_0_q8_0(const uint8_t* s_act, const float* s_ad, const uint8_t* const (&rows)[2],
                                   const uint4 (&sc)[2], int g, int t, float (&acc)[NT][4]) {
#pragma unroll
    for (int j = 0; j < kSbChunks; ++j) {
      int a[4];
      if constexpr (T == TensorType::Q4_0) {
        // Repacked chunk: byte i holds element i (low nibble) and i + 16 (high).
        const int off = 16 * j + 8 * (t & 1), sh = 4 * (t / 2);
        const uint2 q[2] = {lds64(rows[0] + off), lds64(rows[1] + off)};
        constexpr uint32_t kBias = 0x08080808u;
        a[0] = static_cast<int>(__vsubss4((q[0].x >> sh) & kLowNibbles, kBias));
        a[1] = static_cast<int>(__vsubss4((q[1].x >> sh) & kLowNibbles, kBias));
        a[2] = static_cast<int>(__vsubss4((q[0].y >> sh) & kLowNibbles, kBias));
        a[3] = static_cast<int>(__vsubss4((q[1].y >> sh) & kLowNibbles, kBias));
      } else {
        const uint2 q[2] = {lds64(rows[0] + 32 * j + 8 * t), lds64(rows[1] + 32 * j + 8 * t)};
        a[0] = static_cast<int>(q[0].x);
        a[1] = static_cast<int>(q[1].x);
        a[2] = static_cast<int>(q[0].y);
        a[3] = static_cast<int>(q[1].y);
      }
      float dw[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t word = (&sc[h].x)[j / 2];
        dw[h] = __half2float(__ushort_as_half(static_cast<unsigned short>(word >> (16 * (j % 2)))));
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const uint2 b = lds64(tok_row(s_act, nt, g) + j * kChunk + 8 * t);
        int s4[4];
        mma_k32(s4, a, static_cast<int>(b.x), static_cast<int>(b.y));
        const float* dap = s_ad + (nt * kTokTile + 2 * t) * kSbChunks + j;
        const float2 da = make_float2(dap[0], dap[kSbChunks]);
        // |s| <= 32 * 127 * 127 < 2^22.
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          acc[nt][e] = fmaf(dw[e / 2] * ((e & 1) ? da.y : da.x), small_int_to_float(s4[e]), acc[nt][e]);
        }
      }
    }
  }
};

}  // namespace ferrite::cuda::mma
