// The IQ and TQ weight types, and MXFP4, on the GPU (GGUF block layout, rows of whole
// blocks; the IQ tables at w.grid, iq_tables.h): one 32-element chunk
// decoded into small integers and per-8 scales,
//   value i = sc[i / 8] * q[i]                    (IQ2_*, IQ3_*, IQ4_*, TQ*, MXFP4)
//   value i = sc[i / 8] * (q[i] + delta[i / 8])   (IQ1_S, IQ1_M)
// with the signs folded into q (negation is exact) and sc formed by the same
// f32 operations, in the same order, as the CPU's reference dequantizers
// (quant/dequant_iq.cpp, dequant_k.cpp, mxfp4.cpp), so that value() gives their bits.
// MXFP4's 17-byte blocks have no alignment: it is read in single bytes only.
// q fits int8 everywhere (|grid| <= 62, IQ4 values -127..113), so the GEMV
// (gemv_iq.cu) multiplies q by the 8-bit activations with dp4a.
// Used by dequant_chunk.cuh (dequant.cu, get_rows) and gemv_iq.cu.
#pragma once

#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include "cuda/kernels/gpu_matrix.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "quant/mxfp4.h"

namespace ferrite::cuda::iqd {

constexpr int kChunk = 32;   // elements per chunk
constexpr int kGroup = 8;    // elements per scale (and IQ1 delta)
constexpr int kGroups = kChunk / kGroup;
constexpr int kSb = quant::kQKK;  // elements per super-block


template <TensorType T>
constexpr bool kIqType = T == TensorType::IQ1_S || T == TensorType::IQ1_M || T == TensorType::IQ2_XXS ||
                         T == TensorType::IQ2_XS || T == TensorType::IQ2_S || T == TensorType::IQ3_XXS ||
                         T == TensorType::IQ3_S || T == TensorType::IQ4_NL || T == TensorType::IQ4_XS ||
                         T == TensorType::TQ1_0 || T == TensorType::TQ2_0 || T == TensorType::MXFP4;

template <TensorType T>
constexpr bool kWithDelta = T == TensorType::IQ1_S || T == TensorType::IQ1_M;

// Elements and bytes of one block of T.
template <TensorType T>
__host__ __device__ constexpr int block_elems() {
  return T == TensorType::IQ4_NL || T == TensorType::MXFP4 ? quant::kQK : kSb;
}
template <TensorType T>
__host__ __device__ constexpr int block_bytes() {
  using namespace quant;
  switch (T) {
    case TensorType::IQ4_NL: return sizeof(BlockIQ4_NL);
    case TensorType::MXFP4: return sizeof(BlockMXFP4);
    case TensorType::IQ4_XS: return sizeof(BlockIQ4_XS);
    case TensorType::TQ1_0: return sizeof(BlockTQ1_0);
    case TensorType::TQ2_0: return sizeof(BlockTQ2_0);
    case TensorType::IQ2_XXS: return sizeof(BlockIQ2_XXS);
    case TensorType::IQ2_XS: return sizeof(BlockIQ2_XS);
    case TensorType::IQ2_S: return sizeof(BlockIQ2_S);
    case TensorType::IQ3_XXS: return sizeof(BlockIQ3_XXS);
    case TensorType::IQ3_S: return sizeof(BlockIQ3_S);
    case TensorType::IQ1_S: return sizeof(BlockIQ1_S);
    default: return sizeof(BlockIQ1_M);
  }
}

// Blocks are 2-byte aligned (every block size is even): bytes, u16 and u32
// are read in 1- and 2-byte loads.
__device__ __forceinline__ uint32_t ld8(const uint8_t* p) { return __ldg(p); }
__device__ __forceinline__ uint32_t ld16(const uint8_t* p) {
  return __ldg(reinterpret_cast<const unsigned short*>(p));
}
__device__ __forceinline__ uint32_t ld32(const uint8_t* p) { return ld16(p) | (ld16(p + 2) << 16); }
// Four bytes from any address (MXFP4).
__device__ __forceinline__ uint32_t ld32_bytes(const uint8_t* p) {
  return ld8(p) | (ld8(p + 1) << 8) | (ld8(p + 2) << 16) | (ld8(p + 3) << 24);
}
// MXFP4's float scale, half of 2^(e-127) (quant::mxfp4_scale on the CPU).
__device__ __forceinline__ float mxfp4_scale_at(const uint8_t* blk) {
  return __uint_as_float(quant::mxfp4_scale_bits(static_cast<uint8_t>(ld8(blk + offsetof(quant::BlockMXFP4, e)))));
}
__device__ __forceinline__ float f16_at(const uint8_t* p) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(ld16(p))));
}
__device__ __forceinline__ uint64_t grid64(const void* g, uint32_t i) {
  return __ldg(static_cast<const unsigned long long*>(g) + i);
}
__device__ __forceinline__ uint32_t grid32(const void* g, uint32_t i) {
  return __ldg(static_cast<const unsigned int*>(g) + i);
}

// The 8-bit sign pattern of a 7-bit sign index (the 8th bit makes the count even).
__device__ __forceinline__ uint32_t sign_byte(uint32_t index7) { return index7 | ((__popc(index7) & 1u) << 7); }

// Eight elements of an 8-byte grid entry, negated where `signs` has the bit.
__device__ __forceinline__ void put8(int8_t* q, uint64_t entry, uint32_t signs) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int v = static_cast<int>((entry >> (8 * j)) & 0xFF);
    q[j] = static_cast<int8_t>((signs >> j) & 1u ? -v : v);
  }
}

// Four elements of a 4-byte grid entry with sign bits first..first + 3.
__device__ __forceinline__ void put4(int8_t* q, uint32_t entry, uint32_t signs, int first) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int v = static_cast<int>((entry >> (8 * j)) & 0xFF);
    q[j] = static_cast<int8_t>((signs >> (first + j)) & 1u ? -v : v);
  }
}

// A decoded chunk (see above), element by element.
struct Chunk {
  int8_t q[kChunk];
  float sc[kGroups];
  float delta[kGroups];
  // Group l from an 8-byte grid entry; half h (4 elements) of group l from a 4-byte one.
  __device__ __forceinline__ void put8(int l, uint64_t entry, uint32_t signs) { iqd::put8(q + kGroup * l, entry, signs); }
  __device__ __forceinline__ void put4(int l, int h, uint32_t entry, uint32_t signs, int first) {
    iqd::put4(q + kGroup * l + 4 * h, entry, signs, first);
  }
};

// Bytes 0xFF where bit j (j < 4) of `bits` is set, else 0.
__device__ __forceinline__ uint32_t byte_mask4(uint32_t bits) {
  return (((bits & 0xF) * 0x00204081u) & 0x01010101u) * 0xFFu;
}

// The same chunk as words of 4 int8 (element 4i + j in byte j of word i),
// for the GEMV's dp4a: signs applied per byte as (v ^ m) - m.
struct Words {
  int w[kChunk / 4];
  float sc[kGroups];
  float delta[kGroups];
  __device__ __forceinline__ void put8(int l, uint64_t entry, uint32_t signs) {
    const uint32_t m0 = byte_mask4(signs), m1 = byte_mask4(signs >> 4);
    const auto lo = static_cast<uint32_t>(entry), hi = static_cast<uint32_t>(entry >> 32);
    w[2 * l] = static_cast<int>(__vsub4(lo ^ m0, m0));
    w[2 * l + 1] = static_cast<int>(__vsub4(hi ^ m1, m1));
  }
  __device__ __forceinline__ void put4(int l, int h, uint32_t entry, uint32_t signs, int first) {
    const uint32_t m = byte_mask4(signs >> first);
    w[2 * l + h] = static_cast<int>(__vsub4(entry ^ m, m));
  }
};

// IQ2/IQ3 4-bit scale: (d (0.5 + s)) unit.
__device__ __forceinline__ float half_scale(float d, uint32_t s, float unit) {
  return __fmul_rn(__fmul_rn(d, __fadd_rn(0.5f, static_cast<float>(s))), unit);
}

// IQ4: 16 bytes of nibble indices, element j low nibble of byte j, j + 16 high.
__device__ __forceinline__ void iq4_values(const uint8_t* qs, const void* table, int8_t* q) {
  const auto* t = static_cast<const signed char*>(table);
#pragma unroll
  for (int j = 0; j < kChunk / 2; ++j) {
    const uint32_t b = ld8(qs + j);
    q[j] = static_cast<int8_t>(__ldg(t + (b & 0xF)));
    q[j + kChunk / 2] = static_cast<int8_t>(__ldg(t + (b >> 4)));
  }
}

// TQ1_0 trit n (0 = most significant) of a byte of 5 (or 4) trits.
__device__ __forceinline__ int tq1_trit(uint32_t byte, int n) {
  const uint32_t pow3 = n == 0 ? 1 : n == 1 ? 3 : n == 2 ? 9 : n == 3 ? 27 : 81;
  return static_cast<int>(((byte * pow3) & 0xFF) * 3 >> 8);
}

// Chunk c (0 .. w.k / 32 - 1) of row `row` into a Chunk, or for the grid
// types (IQ1_*, IQ2_*, IQ3_*) also into Words.
template <TensorType T, typename Out = Chunk>
__device__ __forceinline__ void decode(const GpuMatrix& w, int64_t row, int64_t c, Out& out) {
  using namespace quant;
  constexpr int kPerBlock = block_elems<T>() / kChunk;  // chunks per block
  const uint8_t* blk = w.data + row * w.row_bytes + (c / kPerBlock) * block_bytes<T>();
  const int ib = static_cast<int>(c % kPerBlock);  // chunk within the block
#pragma unroll
  for (int g = 0; g < kGroups; ++g) out.delta[g] = 0.0f;
  float sc[kGroups];
  if constexpr (T == TensorType::IQ4_NL) {
    const float d = f16_at(blk + offsetof(BlockIQ4_NL, d));
    iq4_values(blk + offsetof(BlockIQ4_NL, qs), w.grid, out.q);
#pragma unroll
    for (int g = 0; g < kGroups; ++g) sc[g] = d;
  } else if constexpr (T == TensorType::MXFP4) {  // iq4_values reads bytes only
    const float d = mxfp4_scale_at(blk);
    iq4_values(blk + offsetof(BlockMXFP4, qs), w.grid, out.q);
#pragma unroll
    for (int g = 0; g < kGroups; ++g) sc[g] = d;
  } else if constexpr (T == TensorType::IQ4_XS) {
    const float d = f16_at(blk + offsetof(BlockIQ4_XS, d));
    const uint32_t sh = ld16(blk + offsetof(BlockIQ4_XS, scales_h));
    const uint32_t sl = ld8(blk + offsetof(BlockIQ4_XS, scales_l) + ib / 2);
    const int ls = static_cast<int>(((sl >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4));
    const float dl = __fmul_rn(d, static_cast<float>(ls - 32));
    iq4_values(blk + offsetof(BlockIQ4_XS, qs) + 16 * ib, w.grid, out.q);
#pragma unroll
    for (int g = 0; g < kGroups; ++g) sc[g] = dl;
  } else if constexpr (T == TensorType::TQ2_0) {
    // Bytes 32 (ib / 4) .. + 31, bit pair ib % 4.
    const float d = f16_at(blk + offsetof(BlockTQ2_0, d));
    const uint8_t* qs = blk + offsetof(BlockTQ2_0, qs) + kChunk * (ib / 4);
    const int shift = 2 * (ib % 4);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) out.q[j] = static_cast<int8_t>(static_cast<int>((ld8(qs + j) >> shift) & 3) - 1);
#pragma unroll
    for (int g = 0; g < kGroups; ++g) sc[g] = d;
  } else if constexpr (T == TensorType::TQ1_0) {
    // Elements 0..159: trit e / 32 of qs[e % 32] (chunks 0..4); 160..239:
    // trit f / 16 of qs[32 + f % 16] (f = e - 160: chunks 5, 6 and the first
    // half of 7); 240..255: trit f / 4 of qh[f % 4] (f = e - 240).
    constexpr int kWide = 32, kWideChunks = 5;
    constexpr int kNarrow = sizeof(BlockTQ1_0::qs) - kWide, kQh = sizeof(BlockTQ1_0::qh);
    constexpr int kHalf = kChunk / 2;
    const float d = f16_at(blk + offsetof(BlockTQ1_0, d));
    const bool wide = ib < kWideChunks, last = ib == kPerBlock - 1;
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      // j is known when compiled: only ib's cases remain to select.
      const int narrow_byte = kWide + j % kNarrow, narrow_n = 2 * (ib - kWideChunks) + j / kHalf;
      const int qh_byte = static_cast<int>(offsetof(BlockTQ1_0, qh)) + (j - kHalf) % kQh,
                qh_n = (j - kHalf) / kQh;
      int byte, n;
      if (wide) {
        byte = j;
        n = ib;
      } else if (!last || j < kHalf) {
        byte = narrow_byte;
        n = last ? 2 * (kPerBlock - 1 - kWideChunks) : narrow_n;
      } else {
        byte = qh_byte;
        n = qh_n;
      }
      out.q[j] = static_cast<int8_t>(tq1_trit(ld8(blk + byte), n) - 1);
    }
#pragma unroll
    for (int g = 0; g < kGroups; ++g) sc[g] = d;
  } else if constexpr (T == TensorType::IQ2_XXS) {
    const float d = f16_at(blk + offsetof(BlockIQ2_XXS, d));
    const uint8_t* q = blk + offsetof(BlockIQ2_XXS, qs) + 8 * ib;
    const uint32_t aux0 = ld32(q), aux1 = ld32(q + 4);
    const float db = half_scale(d, aux1 >> 28, 0.25f);
#pragma unroll
    for (int l = 0; l < kGroups; ++l) {
      out.put8(l, grid64(w.grid, (aux0 >> (8 * l)) & 0xFF), sign_byte((aux1 >> (7 * l)) & 127));
      sc[l] = db;
    }
  } else if constexpr (T == TensorType::IQ2_XS) {
    const float d = f16_at(blk + offsetof(BlockIQ2_XS, d));
    const uint32_t s = ld8(blk + offsetof(BlockIQ2_XS, scales) + ib);
    const float db[2] = {half_scale(d, s & 0xF, 0.25f), half_scale(d, s >> 4, 0.25f)};
#pragma unroll
    for (int l = 0; l < kGroups; ++l) {
      const uint32_t qv = ld16(blk + offsetof(BlockIQ2_XS, qs) + 2 * (4 * ib + l));
      out.put8(l, grid64(w.grid, qv & 511), sign_byte(qv >> 9));
      sc[l] = db[l / 2];
    }
  } else if constexpr (T == TensorType::IQ2_S) {
    const float d = f16_at(blk + offsetof(BlockIQ2_S, d));
    const uint32_t s = ld8(blk + offsetof(BlockIQ2_S, scales) + ib);
    const float db[2] = {half_scale(d, s & 0xF, 0.25f), half_scale(d, s >> 4, 0.25f)};
    const uint8_t* qs = blk + offsetof(BlockIQ2_S, qs);
    const uint32_t qh = ld8(blk + offsetof(BlockIQ2_S, qh) + ib);
#pragma unroll
    for (int l = 0; l < kGroups; ++l) {
      const uint32_t index = ld8(qs + 4 * ib + l) | ((qh << (8 - 2 * l)) & 0x300);
      out.put8(l, grid64(w.grid, index), ld8(qs + kSb / 8 + 4 * ib + l));
      sc[l] = db[l / 2];
    }
  } else if constexpr (T == TensorType::IQ3_XXS) {
    const float d = f16_at(blk + offsetof(BlockIQ3_XXS, d));
    const uint8_t* qs = blk + offsetof(BlockIQ3_XXS, qs);
    const uint32_t aux = ld32(qs + kSb / 4 + 4 * ib);
    const float db = half_scale(d, aux >> 28, 0.5f);
#pragma unroll
    for (int l = 0; l < kGroups; ++l) {
      const uint32_t signs = sign_byte((aux >> (7 * l)) & 127);
      out.put4(l, 0, grid32(w.grid, ld8(qs + 8 * ib + 2 * l)), signs, 0);
      out.put4(l, 1, grid32(w.grid, ld8(qs + 8 * ib + 2 * l + 1)), signs, 4);
      sc[l] = db;
    }
  } else if constexpr (T == TensorType::IQ3_S) {
    const float d = f16_at(blk + offsetof(BlockIQ3_S, d));
    const uint8_t* qs = blk + offsetof(BlockIQ3_S, qs) + 8 * ib;
    const uint32_t s = (ld8(blk + offsetof(BlockIQ3_S, scales) + ib / 2) >> (4 * (ib % 2))) & 0xF;
    const float db = __fmul_rn(d, static_cast<float>(1 + 2 * s));
    const uint32_t qh = ld8(blk + offsetof(BlockIQ3_S, qh) + ib);
#pragma unroll
    for (int l = 0; l < kGroups; ++l) {
      const uint32_t i1 = ld8(qs + 2 * l) | ((qh << (8 - 2 * l)) & 256);
      const uint32_t i2 = ld8(qs + 2 * l + 1) | ((qh << (7 - 2 * l)) & 256);
      const uint32_t signs = ld8(blk + offsetof(BlockIQ3_S, signs) + 4 * ib + l);
      out.put4(l, 0, grid32(w.grid, i1), signs, 0);
      out.put4(l, 1, grid32(w.grid, i2), signs, 4);
      sc[l] = db;
    }
  } else if constexpr (T == TensorType::IQ1_S) {
    const float d = f16_at(blk + offsetof(BlockIQ1_S, d));
    const uint32_t qh = ld16(blk + offsetof(BlockIQ1_S, qh) + 2 * ib);
    const float dl = __fmul_rn(d, static_cast<float>(2 * ((qh >> 12) & 7) + 1));
    const float delta = (qh & 0x8000) ? -kIq1Delta : kIq1Delta;
#pragma unroll
    for (int l = 0; l < kGroups; ++l) {
      const uint32_t index = ld8(blk + offsetof(BlockIQ1_S, qs) + 4 * ib + l) | (((qh >> (3 * l)) & 7) << 8);
      out.put8(l, grid64(w.grid, index), 0);
      sc[l] = dl;
      out.delta[l] = delta;
    }
  } else {  // IQ1_M
    static_assert(T == TensorType::IQ1_M, "not an IQ/TQ type");
    const uint8_t* scales = blk + offsetof(BlockIQ1_M, scales);
    uint32_t s16[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) s16[i] = ld16(scales + 2 * i);
    const uint32_t bits = (s16[0] >> 12) | ((s16[1] >> 8) & 0x00F0) | ((s16[2] >> 4) & 0x0F00) | (s16[3] & 0xF000);
    const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
    const uint32_t sw = s16[ib / 2] >> (6 * (ib % 2));
    const float dl1 = __fmul_rn(d, static_cast<float>(2 * (sw & 7) + 1));
    const float dl2 = __fmul_rn(d, static_cast<float>(2 * ((sw >> 3) & 7) + 1));
    const uint8_t* qs = blk + offsetof(BlockIQ1_M, qs) + 4 * ib;
    const uint32_t qh0 = ld8(blk + offsetof(BlockIQ1_M, qh) + 2 * ib);
    const uint32_t qh1 = ld8(blk + offsetof(BlockIQ1_M, qh) + 2 * ib + 1);
    const uint32_t index[4] = {ld8(qs) | ((qh0 << 8) & 0x700), ld8(qs + 1) | ((qh0 << 4) & 0x700),
                               ld8(qs + 2) | ((qh1 << 8) & 0x700), ld8(qs + 3) | ((qh1 << 4) & 0x700)};
    const uint32_t dbit[4] = {qh0 & 0x08, qh0 & 0x80, qh1 & 0x08, qh1 & 0x80};
#pragma unroll
    for (int l = 0; l < kGroups; ++l) {
      out.put8(l, grid64(w.grid, index[l]), 0);
      sc[l] = l < 2 ? dl1 : dl2;
      out.delta[l] = dbit[l] ? -kIq1Delta : kIq1Delta;
    }
  }
#pragma unroll
  for (int g = 0; g < kGroups; ++g) out.sc[g] = sc[g];
}

// ---- packed forms for the GEMV: q as 8 words of 4 int8 (element 4i + j in
// byte j of word i), the same values as decode() ------------------------------

template <TensorType T>
constexpr bool kPacked =
    T == TensorType::IQ4_NL || T == TensorType::IQ4_XS || T == TensorType::TQ2_0 || T == TensorType::MXFP4;

// The IQ4 values of four nibble indices (one per byte) from the 16-byte
// table t: byte_perm picks from values 0..7 and 8..15, bit 3 chooses.
__device__ __forceinline__ int iq4_lookup4(uint32_t idx, const uint32_t (&t)[4]) {
  const uint32_t sel = (idx & 0x7) | ((idx >> 4) & 0x70) | ((idx >> 8) & 0x700) | ((idx >> 12) & 0x7000);
  const uint32_t lo = __byte_perm(t[0], t[1], sel), hi = __byte_perm(t[2], t[3], sel);
  const uint32_t m = ((idx >> 3) & 0x01010101u) * 0xFFu;
  return static_cast<int>((lo & ~m) | (hi & m));
}

// Chunk c of row `row` of IQ4_NL, IQ4_XS, MXFP4 or TQ2_0 as packed words; returns
// the chunk's one scale (decode()'s sc).
template <TensorType T>
__device__ __forceinline__ float decode_packed(const GpuMatrix& w, int64_t row, int64_t c, int (&q)[kChunk / 4]) {
  using namespace quant;
  constexpr int kPerBlock = block_elems<T>() / kChunk;
  const uint8_t* blk = w.data + row * w.row_bytes + (c / kPerBlock) * block_bytes<T>();
  const int ib = static_cast<int>(c % kPerBlock);
  constexpr uint32_t kLow4 = 0x0F0F0F0Fu;
  if constexpr (T == TensorType::TQ2_0) {
    const uint8_t* qs = blk + offsetof(BlockTQ2_0, qs) + kChunk * (ib / 4);
    const int shift = 2 * (ib % 4);
#pragma unroll
    for (int i = 0; i < kChunk / 4; ++i) {
      const uint32_t v = (ld32(qs + 4 * i) >> shift) & 0x03030303u;
      q[i] = static_cast<int>(((v | 0x80808080u) - 0x01010101u) ^ 0x80808080u);  // v - 1 per byte
    }
    return f16_at(blk + offsetof(BlockTQ2_0, d));
  } else {
    const int4 tv = __ldg(static_cast<const int4*>(w.grid));
    const uint32_t t[4] = {static_cast<uint32_t>(tv.x), static_cast<uint32_t>(tv.y), static_cast<uint32_t>(tv.z),
                           static_cast<uint32_t>(tv.w)};
    float scale;
    const uint8_t* qs;
    if constexpr (T == TensorType::IQ4_NL) {
      scale = f16_at(blk + offsetof(BlockIQ4_NL, d));
      qs = blk + offsetof(BlockIQ4_NL, qs);
    } else if constexpr (T == TensorType::MXFP4) {
      scale = mxfp4_scale_at(blk);
      qs = blk + offsetof(BlockMXFP4, qs);
    } else {
      const float d = f16_at(blk + offsetof(BlockIQ4_XS, d));
      const uint32_t sh = ld16(blk + offsetof(BlockIQ4_XS, scales_h));
      const uint32_t sl = ld8(blk + offsetof(BlockIQ4_XS, scales_l) + ib / 2);
      const int ls = static_cast<int>(((sl >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4));
      scale = __fmul_rn(d, static_cast<float>(ls - 32));
      qs = blk + offsetof(BlockIQ4_XS, qs) + 16 * ib;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t b = T == TensorType::MXFP4 ? ld32_bytes(qs + 4 * i) : ld32(qs + 4 * i);
      q[i] = iq4_lookup4(b & kLow4, t);
      q[i + 4] = iq4_lookup4((b >> 4) & kLow4, t);
    }
    return scale;
  }
}

// Element i of a decoded chunk, as the CPU's reference forms it.
template <TensorType T>
__device__ __forceinline__ float value(const Chunk& c, int i) {
  const float q = static_cast<float>(c.q[i]);
  if constexpr (kWithDelta<T>) return __fmul_rn(c.sc[i / kGroup], __fadd_rn(q, c.delta[i / kGroup]));
  return __fmul_rn(c.sc[i / kGroup], q);
}

}  // namespace ferrite::cuda::iqd
