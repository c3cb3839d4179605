// The 32 values of one 32-element chunk of a GPU matrix (gpu_matrix.h
// layouts), formed in f32 exactly as the CPU's reference dequantizers form
// them (quant/dequant_legacy.cpp, dequant_k.cpp): the same operations in the
// same order, each rounded (no fused multiply-adds), so the values are the
// reference's bits:
//   Q4_0: d (q - 8)   Q4_1: q d + m   Q5_0: (q - 16) d   Q5_1: q d + m   Q8_0: d q
//   Q2_K: (d sc) q - (dmin m)  (per 16)   Q3_K: (d (sc - 32)) (q - 4 [high bit clear])  (per 16)
//   Q4_K, Q5_K: (d sc) q - (dmin m)  (per 32)   Q6_K: (d sc) (q - 32)  (per 16)
//   IQ and TQ types: dequant_iq.cuh
// Used by dequant.cu (prefill and the exact mode's f32 rows) and row_ops.cu (get_rows).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/kernels/dequant_iq.cuh"
#include "cuda/kernels/gpu_matrix.h"

namespace ferrite::cuda::dq {

constexpr int kChunk = 32;           // elements per chunk
constexpr int kChunksPerK = 8;       // chunks per 256-element super-block
constexpr int kQ4Bytes = kChunk / 2; // repacked low-nibble quants per chunk
constexpr int kQ2KBytes = 96;        // GPU block: scales[16], qs[64], d, dmin, 12 bytes of padding
constexpr int kQ3KBytes = 112;       // GPU block: hmask[32], qs[64], scales[12], d, 2 bytes of padding
constexpr int kQ4KBlockBytes = 144;  // d, dmin, scales[12], qs[128]
constexpr int kQ5KBlockBytes = 176;  // d, dmin, scales[12], qh[32], qs[128]
constexpr int kQ6KBlockBytes = 210;  // ql[128], qh[64], scales[16], d
constexpr int kQ2KQs = 16, kQ2KD = 80;
constexpr int kQ3KQs = 32, kQ3KScales = 96, kQ3KD = 108;
constexpr int kKScales = 4;          // offset of the packed scales in a Q4_K/Q5_K block
constexpr int kQ4KQuants = 16;       // offset of the quants in a Q4_K block
constexpr int kQ5KQh = 16, kQ5KQuants = 48;
constexpr int kQ6KQh = 128, kQ6KScales = 192, kQ6KD = 208;
constexpr int kQ5High = 16;          // the fifth bit's weight

__device__ __forceinline__ float half_at(const uint8_t* p) {
  return __half2float(*reinterpret_cast<const half*>(p));
}
__device__ __forceinline__ float half_bits(uint16_t h) { return __half2float(__ushort_as_half(h)); }

// Q4_K/Q5_K 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes.
__device__ __forceinline__ void k_scale_min(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q3_K's 6-bit scale j (0..15, before subtracting 32) from its 12 packed bytes.
__device__ __forceinline__ int q3k_scale(int j, const uint8_t* packed) {
  const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
  const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}

// Low 4 bits of element j (0..31) of a repacked legacy block.
__device__ __forceinline__ int legacy_nibble(const uint8_t* q, int j) {
  return j < kChunk / 2 ? (q[j] & 0xF) : (q[j - kChunk / 2] >> 4);
}

// The 32 values of chunk c (of n_chunks per row) of row `row`.
template <TensorType T>
__device__ __forceinline__ void chunk_values(const GpuMatrix& w, int64_t row, int64_t c, int64_t n_chunks, float* v) {
  const int64_t b = row * n_chunks + c;  // block index of the 32-element types
  if constexpr (T == TensorType::Q4_0) {
    const uint8_t* q = w.data + b * kQ4Bytes;
    const float d = half_bits(w.scales[b]);
#pragma unroll
    for (int i = 0; i < kQ4Bytes; ++i) {
      v[i] = __fmul_rn(d, static_cast<float>((q[i] & 0xF) - 8));
      v[i + kQ4Bytes] = __fmul_rn(d, static_cast<float>((q[i] >> 4) - 8));
    }
  } else if constexpr (T == TensorType::Q4_1 || T == TensorType::Q5_1 || T == TensorType::Q5_0) {
    const uint8_t* q = w.data + b * kQ4Bytes;
    constexpr bool kMin = T != TensorType::Q5_0;
    const float d = half_bits(w.scales[kMin ? 2 * b : b]);
    const float m = kMin ? half_bits(w.scales[2 * b + 1]) : 0.0f;
    const uint32_t qh = T == TensorType::Q4_1 ? 0u : w.high[b];
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int q5 = legacy_nibble(q, j) | static_cast<int>(((qh >> j) & 1u) << 4);
      if constexpr (kMin) {
        v[j] = __fadd_rn(__fmul_rn(static_cast<float>(q5), d), m);
      } else {
        v[j] = __fmul_rn(static_cast<float>(q5 - kQ5High), d);
      }
    }
  } else if constexpr (T == TensorType::Q8_0) {
    const auto* q = reinterpret_cast<const int8_t*>(w.data) + b * kChunk;
    const float d = half_bits(w.scales[b]);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) v[i] = __fmul_rn(d, static_cast<float>(q[i]));
  } else if constexpr (T == TensorType::Q2_K || T == TensorType::Q3_K) {
    constexpr bool kQ2 = T == TensorType::Q2_K;
    const uint8_t* blk = w.data + row * w.row_bytes + (c / kChunksPerK) * (kQ2 ? kQ2KBytes : kQ3KBytes);
    const int within = static_cast<int>(c % kChunksPerK);
    const int h = within / 4, j = within % 4;  // 128-element half, 2-bit plane
    const uint8_t* q = blk + (kQ2 ? kQ2KQs : kQ3KQs) + 32 * h;
#pragma unroll
    for (int part = 0; part < 2; ++part) {
      const int is = 8 * h + 2 * j + part;  // 16-element sub-block
      float dl, ml = 0.0f;
      if constexpr (kQ2) {
        const int sc = blk[is];
        dl = __fmul_rn(half_at(blk + kQ2KD), static_cast<float>(sc & 0xF));
        ml = __fmul_rn(half_at(blk + kQ2KD + 2), static_cast<float>(sc >> 4));
      } else {
        dl = __fmul_rn(half_at(blk + kQ3KD), static_cast<float>(q3k_scale(is, blk + kQ3KScales) - 32));
      }
#pragma unroll
      for (int l = 0; l < 16; ++l) {
        const int i = 16 * part + l;
        const int q2 = (q[i] >> (2 * j)) & 3;
        if constexpr (kQ2) {
          v[i] = __fsub_rn(__fmul_rn(dl, static_cast<float>(q2)), ml);
        } else {
          const int hbit = (blk[i] >> (4 * h + j)) & 1;  // hmask[i] (offset 0)
          v[i] = __fmul_rn(dl, static_cast<float>(q2 - (hbit != 0 ? 0 : 4)));
        }
      }
    }
  } else if constexpr (T == TensorType::Q4_K || T == TensorType::Q5_K) {
    constexpr bool kQ5 = T == TensorType::Q5_K;
    const uint8_t* blk = w.data + row * w.row_bytes + (c / kChunksPerK) * (kQ5 ? kQ5KBlockBytes : kQ4KBlockBytes);
    const int sub = static_cast<int>(c % kChunksPerK);
    const uint8_t* q = blk + (kQ5 ? kQ5KQuants : kQ4KQuants) + kChunk * (sub / 2);
    int sc, m;
    k_scale_min(sub, blk + kKScales, sc, m);
    const float d1 = __fmul_rn(half_at(blk), static_cast<float>(sc));
    const float m1 = __fmul_rn(half_at(blk + 2), static_cast<float>(m));
    const int shift = (sub & 1) ? 4 : 0;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      int qv = (q[i] >> shift) & 0xF;
      if constexpr (kQ5) qv += ((blk[kQ5KQh + i] >> sub) & 1) ? kQ5High : 0;
      v[i] = __fsub_rn(__fmul_rn(d1, static_cast<float>(qv)), m1);
    }
  } else if constexpr (T == TensorType::Q6_K) {
    const uint8_t* blk = w.data + row * w.row_bytes + (c / kChunksPerK) * kQ6KBlockBytes;
    const int within = static_cast<int>(c % kChunksPerK);
    const int h = within / 4, qtr = within % 4;
    const uint8_t* ql = blk + 64 * h + (qtr & 1) * 32;
    const uint8_t* qh = blk + kQ6KQh + 32 * h;
    const int shift_l = 4 * (qtr >> 1), shift_h = 2 * qtr;
    const auto* sc = reinterpret_cast<const int8_t*>(blk + kQ6KScales + 8 * h + 2 * qtr);
    const float d = half_at(blk + kQ6KD);
    const float f0 = __fmul_rn(d, static_cast<float>(sc[0])), f1 = __fmul_rn(d, static_cast<float>(sc[1]));
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      const int q = (((ql[i] >> shift_l) & 0xF) | (((qh[i] >> shift_h) & 3) << 4)) - 32;
      v[i] = __fmul_rn(i < kChunk / 2 ? f0 : f1, static_cast<float>(q));
    }
  } else if constexpr (iqd::kIqType<T>) {
    iqd::Chunk ch;
    iqd::decode<T>(w, row, c, ch);
#pragma unroll
    for (int i = 0; i < kChunk; ++i) v[i] = iqd::value<T>(ch, i);
  }
}

// Element e of row r, for the types above (one chunk decoded, one value kept).
template <TensorType T>
__device__ float element_of(const GpuMatrix& w, int64_t r, int64_t e) {
  float v[kChunk];
  chunk_values<T>(w, r, e / kChunk, w.k / kChunk, v);
  float out = 0.0f;
#pragma unroll
  for (int i = 0; i < kChunk; ++i) out = i == static_cast<int>(e % kChunk) ? v[i] : out;
  return out;
}

}  // namespace ferrite::cuda::dq
