// gemv_quant.cu's tasks for Q4_1, Q5_0, Q5_1 (repacked: 16 nibble bytes per
// 32-element chunk, the fifth bits and the scales apart; gpu_matrix.h), Q5_K
// (GGUF blocks), and Q2_K, Q3_K (blocks padded to 96 and 112 bytes). Each
// computes integer sums per 16 or 32 elements (dp4a) and scales them in f32:
//   Q5_0: d d_a (sum(q a) - 16 sum(a))         (one chunk per task)
//   Q4_1, Q5_1: d d_a sum(q a) + m s_a           (s_a: the Q8_1 block's s)
//   Q5_K: as Q4_K, q with its fifth bit          (two sub-blocks per task)
//   Q3_K: d d_a sum_sb (sc_sb - 32) sum_16(q a)   (two 2-bit planes of a half)
//   Q2_K: d_a (d sum_sb sc_sb sum_16(q a) - dmin sum_sb m_sb sum_16(a))
#pragma once

#include "cuda/kernels/gemv_task.cuh"

namespace ferrite::cuda::gemv {

constexpr uint32_t kOnes = 0x01010101u;
constexpr int kQ5KBytes = 176;   // d, dmin, scales[12], qh[32], qs[128]
constexpr int kQ5KQh = 16, kQ5KQs = 48;
constexpr int kQ2KBytes = 96;    // GPU block: scales[16], qs[64], d, dmin, padding
constexpr int kQ2KQs = 16, kQ2KD = 80;
constexpr int kQ3KBytes = 112;   // GPU block: hmask[32], qs[64], scales[12], d, padding
constexpr int kQ3KQs = 32, kQ3KTail = 96;
constexpr int kQ5Offset = 16;    // Q5_0: q - 16

// Bits 0..3 of x to bit 4 of bytes 0..3 (the fifth bits of 4 elements).
__device__ __forceinline__ int spread4(uint32_t x) {
  return static_cast<int>((((x & 0xFu) * 0x00204081u) & kOnes) << 4);
}

// Bytes v (each 0..7) minus 4, as int8 (see minus32).
__device__ __forceinline__ int minus4(uint32_t v) {
  return static_cast<int>(((v | 0x80808080u) - 0x04040404u) ^ 0x80808080u);
}

// Byte i (0..15) of four words.
__device__ __forceinline__ int byte_at(const uint32_t (&w)[4], int i) {
  return static_cast<int>((w[i / 4] >> (8 * (i % 4))) & 0xFF);
}

// The legacy 32-element types: a chunk of 16 nibble bytes (element i low,
// i + 16 high), the fifth bits (bit j: element j), d or (d, m).
template <bool kHigh, bool kMin>
struct LegacyTask {
  static constexpr int kMinBlocks = 4;
  static constexpr int kPerRound = 4;
  static constexpr bool kSums = !kMin;  // Q5_0 subtracts 16 sum(a)
  static constexpr bool kQ81 = kMin;    // Q4_1/Q5_1 add m s_a
  struct Raw {
    int4 q;
    uint32_t h;
    uint32_t d;  // f16 d, or d | m << 16
  };
  static int64_t count(int64_t k) { return k / kChunk; }
  __device__ static RowPtr row(const GpuMatrix& w, int64_t r) {
    const int64_t nb = w.k / kChunk;
    return {w.data + r * nb * 16, w.scales + r * nb * (kMin ? 2 : 1), kHigh ? w.high + r * nb : nullptr};
  }
  __device__ static void load(const RowPtr& p, int task, Raw& r) {
    r.q = load_stream(p.q + task * 16);
    if constexpr (kHigh) r.h = __ldg(p.h + task);
    if constexpr (kMin) {
      r.d = __ldg(reinterpret_cast<const unsigned*>(p.s) + task);
    } else {
      r.d = load_u16(p.s + task);
    }
  }
  __device__ static float dot(const Raw& r, const ActRow& a, int task) {
    const int q[4] = {r.q.x, r.q.y, r.q.z, r.q.w};
    int lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      lo[i] = q[i] & kLow4;
      hi[i] = (q[i] >> 4) & kLow4;
      if constexpr (kHigh) {
        lo[i] |= spread4(r.h >> (4 * i));
        hi[i] |= spread4(r.h >> (16 + 4 * i));
      }
    }
    int s = dot4(hi, a.unit(2 * task + 1), dot4(lo, a.unit(2 * task), 0));
    if constexpr (!kMin) {
      s -= kQ5Offset * a.sums[task];
      return f16_bits(r.d) * a.d[task] * static_cast<float>(s);
    } else {
      return f16_bits(r.d & 0xFFFF) * a.d[task] * static_cast<float>(s) + f16_bits(r.d >> 16) * a.s[task];
    }
  }
};

template <>
struct Task<TensorType::Q5_0> : LegacyTask<true, false> {};
template <>
struct Task<TensorType::Q4_1> : LegacyTask<false, true> {};
template <>
struct Task<TensorType::Q5_1> : LegacyTask<true, true> {};

// Q5_K: sub-blocks 2p (low nibbles, qh bit 2p) and 2p + 1 (high nibbles, qh
// bit 2p + 1), quant bytes 32p .. 32p + 31; task = 4 * super-block + p.
template <>
struct Task<TensorType::Q5_K> {
  static constexpr int kMinBlocks = 3;  // blocks per SM the registers must allow (at most 80 a thread)
  static constexpr int kPerRound = 2;
  static constexpr bool kSums = true;
  static constexpr bool kQ81 = false;
  struct Raw {
    int4 head;  // d, dmin, scales[12]
    int4 h0, h1;
    int4 q0, q1;
  };
  static int64_t count(int64_t k) { return 4 * (k / kSbElems); }
  __device__ static RowPtr row(const GpuMatrix& w, int64_t r) { return {w.data + r * w.row_bytes, nullptr}; }
  __device__ static void load(const RowPtr& p, int task, Raw& r) {
    const uint8_t* blk = p.q + (task / 4) * kQ5KBytes;
    r.head = load_stream(blk);
    r.h0 = load_stream(blk + kQ5KQh);
    r.h1 = load_stream(blk + kQ5KQh + 16);
    r.q0 = load_stream(blk + kQ5KQs + 32 * (task % 4));
    r.q1 = load_stream(blk + kQ5KQs + 16 + 32 * (task % 4));
  }
  __device__ static float dot(const Raw& r, const ActRow& a, int task) {
    const int p = task % 4;
    const int q[8] = {r.q0.x, r.q0.y, r.q0.z, r.q0.w, r.q1.x, r.q1.y, r.q1.z, r.q1.w};
    const uint32_t h[8] = {static_cast<uint32_t>(r.h0.x), static_cast<uint32_t>(r.h0.y), static_cast<uint32_t>(r.h0.z),
                           static_cast<uint32_t>(r.h0.w), static_cast<uint32_t>(r.h1.x), static_cast<uint32_t>(r.h1.y),
                           static_cast<uint32_t>(r.h1.z), static_cast<uint32_t>(r.h1.w)};
    int lo[2][4], hi[2][4];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      lo[i / 4][i % 4] = (q[i] & kLow4) | static_cast<int>(((h[i] >> (2 * p)) & kOnes) << 4);
      hi[i / 4][i % 4] = ((q[i] >> 4) & kLow4) | static_cast<int>(((h[i] >> (2 * p + 1)) & kOnes) << 4);
    }
    const int u = 4 * task;  // first activation unit (64 elements per task)
    const int s0 = dot4(lo[1], a.unit(u + 1), dot4(lo[0], a.unit(u), 0));
    const int s1 = dot4(hi[1], a.unit(u + 3), dot4(hi[0], a.unit(u + 2), 0));
    return k_task_value(r.head, p, s0, s1, a, 2 * task);
  }
};

// Q3_K and Q2_K: task = 4 * super-block + 2h + pp covers the 2-bit planes
// j = 2pp and 2pp + 1 of qs[32h .. 32h + 31] (each plane one 32-element
// chunk, 4h + j of the super-block: sub-blocks 8h + 2j and 8h + 2j + 1).
template <>
struct Task<TensorType::Q3_K> {
  static constexpr int kMinBlocks = 3;
  static constexpr int kPerRound = 2;
  static constexpr bool kSums = false;
  static constexpr bool kQ81 = false;
  struct Raw {
    int4 m0, m1;  // hmask[32]
    int4 q0, q1;  // qs[32h .. 32h + 31]
    int4 tail;    // scales[12], d
  };
  static int64_t count(int64_t k) { return 4 * (k / kSbElems); }
  __device__ static RowPtr row(const GpuMatrix& w, int64_t r) { return {w.data + r * w.row_bytes, nullptr}; }
  __device__ static void load(const RowPtr& p, int task, Raw& r) {
    const uint8_t* blk = p.q + (task / 4) * kQ3KBytes;
    const int h = task / 2 % 2;
    r.m0 = load_stream(blk);
    r.m1 = load_stream(blk + 16);
    r.q0 = load_stream(blk + kQ3KQs + 32 * h);
    r.q1 = load_stream(blk + kQ3KQs + 32 * h + 16);
    r.tail = load_stream(blk + kQ3KTail);
  }
  __device__ static float dot(const Raw& r, const ActRow& a, int task) {
    const int h = task / 2 % 2, pp = task % 2;
    const uint32_t q[8] = {static_cast<uint32_t>(r.q0.x), static_cast<uint32_t>(r.q0.y), static_cast<uint32_t>(r.q0.z),
                           static_cast<uint32_t>(r.q0.w), static_cast<uint32_t>(r.q1.x), static_cast<uint32_t>(r.q1.y),
                           static_cast<uint32_t>(r.q1.z), static_cast<uint32_t>(r.q1.w)};
    const uint32_t hm[8] = {static_cast<uint32_t>(r.m0.x), static_cast<uint32_t>(r.m0.y), static_cast<uint32_t>(r.m0.z),
                            static_cast<uint32_t>(r.m0.w), static_cast<uint32_t>(r.m1.x), static_cast<uint32_t>(r.m1.y),
                            static_cast<uint32_t>(r.m1.z), static_cast<uint32_t>(r.m1.w)};
    const uint32_t sc[4] = {static_cast<uint32_t>(r.tail.x), static_cast<uint32_t>(r.tail.y),
                            static_cast<uint32_t>(r.tail.z), 0u};
    int isum = 0;
#pragma unroll
    for (int jj = 0; jj < 2; ++jj) {
      const int j = 2 * pp + jj;
      int w[2][4];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        w[i / 4][i % 4] = minus4(((q[i] >> (2 * j)) & kLow2) | (((hm[i] >> (4 * h + j)) & kOnes) << 2));
      }
      const int c = 8 * (task / 4) + 4 * h + j;  // chunk within the row
      const int s0 = dot4(w[0], a.unit(2 * c), 0), s1 = dot4(w[1], a.unit(2 * c + 1), 0);
#pragma unroll
      for (int part = 0; part < 2; ++part) {
        const int k = 8 * h + 2 * j + part;
        const int low = k < 8 ? (byte_at(sc, k) & 0xF) : (byte_at(sc, k - 8) >> 4);
        const int scale = (low | (((byte_at(sc, 8 + k % 4) >> (2 * (k / 4))) & 3) << 4)) - 32;
        isum += scale * (part == 0 ? s0 : s1);
      }
    }
    const float d = f16_bits(static_cast<uint32_t>(r.tail.w) & 0xFFFF);
    return a.d[8 * (task / 4)] * d * static_cast<float>(isum);
  }
};

template <>
struct Task<TensorType::Q2_K> {
  static constexpr int kMinBlocks = 4;
  static constexpr int kPerRound = 2;
  static constexpr bool kSums = false;
  static constexpr bool kQ81 = false;
  struct Raw {
    int4 sc;      // scales[16]: low nibble scale, high nibble min
    int4 q0, q1;  // qs[32h .. 32h + 31]
    uint32_t dm;  // d | dmin << 16
  };
  static int64_t count(int64_t k) { return 4 * (k / kSbElems); }
  __device__ static RowPtr row(const GpuMatrix& w, int64_t r) { return {w.data + r * w.row_bytes, nullptr}; }
  __device__ static void load(const RowPtr& p, int task, Raw& r) {
    const uint8_t* blk = p.q + (task / 4) * kQ2KBytes;
    const int h = task / 2 % 2;
    r.sc = load_stream(blk);
    r.q0 = load_stream(blk + kQ2KQs + 32 * h);
    r.q1 = load_stream(blk + kQ2KQs + 32 * h + 16);
    r.dm = __ldg(reinterpret_cast<const unsigned*>(blk + kQ2KD));
  }
  __device__ static float dot(const Raw& r, const ActRow& a, int task) {
    const int h = task / 2 % 2, pp = task % 2;
    const uint32_t q[8] = {static_cast<uint32_t>(r.q0.x), static_cast<uint32_t>(r.q0.y), static_cast<uint32_t>(r.q0.z),
                           static_cast<uint32_t>(r.q0.w), static_cast<uint32_t>(r.q1.x), static_cast<uint32_t>(r.q1.y),
                           static_cast<uint32_t>(r.q1.z), static_cast<uint32_t>(r.q1.w)};
    const uint32_t sc[4] = {static_cast<uint32_t>(r.sc.x), static_cast<uint32_t>(r.sc.y), static_cast<uint32_t>(r.sc.z),
                            static_cast<uint32_t>(r.sc.w)};
    const int ones[4] = {static_cast<int>(kOnes), static_cast<int>(kOnes), static_cast<int>(kOnes),
                         static_cast<int>(kOnes)};
    int isum = 0, msum = 0;
#pragma unroll
    for (int jj = 0; jj < 2; ++jj) {
      const int j = 2 * pp + jj;
      int w[2][4];
#pragma unroll
      for (int i = 0; i < 8; ++i) w[i / 4][i % 4] = static_cast<int>((q[i] >> (2 * j)) & kLow2);
      const int c = 8 * (task / 4) + 4 * h + j;  // chunk within the row
#pragma unroll
      for (int part = 0; part < 2; ++part) {
        const int4 au = a.unit(2 * c + part);
        const int b = byte_at(sc, 8 * h + 2 * j + part);
        isum += (b & 0xF) * dot4(w[part], au, 0);
        msum += (b >> 4) * dot4(ones, au, 0);
      }
    }
    return a.d[8 * (task / 4)] *
           (f16_bits(r.dm & 0xFFFF) * static_cast<float>(isum) - f16_bits(r.dm >> 16) * static_cast<float>(msum));
  }
};

}  // namespace ferrite::cuda::gemv
