// Quantized matrix products y [m, n] = x [m, k] · W^T with 8-bit activations
// (act_quant.cu), integer dot products per 32-element chunk (dp4a), one
// float multiply-add per chunk, as the CPU's quant_dot does:
//   Q4_0: d_w d_a sum((q - 8) a)        Q8_0: d_w d_a sum(q a)
//   Q4_K: d_a (d sc sum(q a) - dmin m sum(a))   per 32-element sub-block
//   Q6_K: d_a d (sc0 sum_{16}((q - 32) a) + sc1 sum_{16}(...))
//   Q5_K: as Q4_K, q with its fifth bit
//   Q3_K: d_a d ((sc0 - 32) sum_{16}(q a) + (sc1 - 32) sum_{16}(...)), q signed
//   Q2_K: d_a (d (sc0 sum_{16}(q a) + ...) - dmin (m0 sum_{16}(a) + m1 sum_{16}(a)))
//   Q5_0: d_w d_a sum((q - 16) a)       Q4_1, Q5_1: d_w d_a sum(q a) + m_w s_a
// (Q8_1 activations for Q4_1/Q5_1: s_a = f16(d sum(q)); cpu/dot/quant_dot_legacy_ref.cpp.)
// One warp per weight row; each lane takes 32-element chunks (16-byte loads
// for Q4_0/Q8_0 repacked, and Q4_K). Up to kCols activation rows share the
// weights a lane decoded; blocks walk column chunks fastest so that a row
// block re-read for the next columns comes from L2.
#include <cuda_fp16.h>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

constexpr int kChunk = 32;          // elements per chunk
constexpr int kWords = kChunk / 4;  // packed int8x4 words per chunk
constexpr int kRowsPerBlock = 4;    // warps per block, one row each
constexpr int kQ4KBlockBytes = 144;
constexpr int kQ6KBlockBytes = 210;
constexpr int kQ5KBlockBytes = 176;
constexpr int kQ2KBlockBytes = 96;   // GPU layout (gpu_matrix.h): padded
constexpr int kQ3KBlockBytes = 112;  // GPU layout: padded
constexpr int kChunksPerK = 8;      // 256 / 32
constexpr uint32_t kOnes = 0x01010101u;

struct Chunk {
  int w[kWords];  // int8 weights, packed (unsigned 0..31 for Q4_1/Q5_1)
  float f0 = 0.0f, f1 = 0.0f;  // per-type factors (see dot_chunk)
  float f2 = 0.0f, f3 = 0.0f;  // Q2_K: dmin m of the two 16-element halves
};

__device__ __forceinline__ int lo_nibbles(int v) { return v & 0x0F0F0F0F; }
__device__ __forceinline__ int hi_nibbles(int v) { return (v >> 4) & 0x0F0F0F0F; }

__device__ __forceinline__ uint32_t load_u32_2aligned(const uint8_t* p) {
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
}

// Q4_K 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes.
__device__ __forceinline__ void q4k_scale_min(int j, const uint8_t* q, int& sc, int& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Bits 0..3 of x to bit 4 of bytes 0..3 (the fifth bits of 4 elements).
__device__ __forceinline__ int fifth_bits(uint32_t x) {
  return static_cast<int>((((x & 0xFu) * 0x00204081u) & kOnes) << 4);
}

// Q4_1, Q5_0, Q5_1 (gpu_matrix.h): 16 nibble bytes per chunk (element i low,
// i + 16 high), the fifth bits (bit j: element j), d or (d, m).
template <TensorType T>
__device__ __forceinline__ void load_legacy(const GpuMatrix& w, int64_t row, int64_t c, int64_t n_chunks, Chunk& ch) {
  constexpr bool kHigh = T != TensorType::Q4_1, kMin = T != TensorType::Q5_0;
  const int4 v = reinterpret_cast<const int4*>(w.data)[row * n_chunks + c];
  const int vv[4] = {v.x, v.y, v.z, v.w};
  const uint32_t h = kHigh ? w.high[row * n_chunks + c] : 0u;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    int lo = lo_nibbles(vv[i]), hi = hi_nibbles(vv[i]);
    if constexpr (kHigh) {
      lo |= fifth_bits(h >> (4 * i));
      hi |= fifth_bits(h >> (16 + 4 * i));
    }
    if constexpr (!kMin) {  // Q5_0: q - 16
      lo = __vsubss4(lo, 0x10101010);
      hi = __vsubss4(hi, 0x10101010);
    }
    ch.w[i] = lo;
    ch.w[i + 4] = hi;
  }
  if constexpr (kMin) {
    ch.f0 = __half2float(__ushort_as_half(w.scales[2 * (row * n_chunks + c)]));
    ch.f1 = __half2float(__ushort_as_half(w.scales[2 * (row * n_chunks + c) + 1]));
  } else {
    ch.f0 = __half2float(__ushort_as_half(w.scales[row * n_chunks + c]));
  }
}

template <TensorType T>
__device__ __forceinline__ void load_chunk(const GpuMatrix& w, int64_t row, int64_t c, int64_t n_chunks, Chunk& ch) {
  if constexpr (T == TensorType::Q4_0) {
    const int4 v = reinterpret_cast<const int4*>(w.data)[row * n_chunks + c];
    const int vv[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      ch.w[i] = __vsubss4(lo_nibbles(vv[i]), 0x08080808);
      ch.w[i + 4] = __vsubss4(hi_nibbles(vv[i]), 0x08080808);
    }
    ch.f0 = __half2float(__ushort_as_half(w.scales[row * n_chunks + c]));
  } else if constexpr (T == TensorType::Q4_1 || T == TensorType::Q5_0 || T == TensorType::Q5_1) {
    load_legacy<T>(w, row, c, n_chunks, ch);
  } else if constexpr (T == TensorType::Q8_0) {
    const int4* p = reinterpret_cast<const int4*>(w.data) + 2 * (row * n_chunks + c);
    const int4 a = p[0], b = p[1];
    ch.w[0] = a.x; ch.w[1] = a.y; ch.w[2] = a.z; ch.w[3] = a.w;
    ch.w[4] = b.x; ch.w[5] = b.y; ch.w[6] = b.z; ch.w[7] = b.w;
    ch.f0 = __half2float(__ushort_as_half(w.scales[row * n_chunks + c]));
  } else if constexpr (T == TensorType::Q4_K) {
    const uint8_t* blk = w.data + row * w.row_bytes + (c / kChunksPerK) * kQ4KBlockBytes;
    const int sub = static_cast<int>(c % kChunksPerK);
    const int4* q = reinterpret_cast<const int4*>(blk + 16 + 32 * (sub / 2));
    const int4 a = q[0], b = q[1];
    const int vv[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < kWords; ++i) ch.w[i] = (sub & 1) ? hi_nibbles(vv[i]) : lo_nibbles(vv[i]);
    const half2 dm = *reinterpret_cast<const half2*>(blk);
    int sc, m;
    q4k_scale_min(sub, blk + 4, sc, m);
    ch.f0 = __low2float(dm) * static_cast<float>(sc);
    ch.f1 = __high2float(dm) * static_cast<float>(m);
  } else if constexpr (T == TensorType::Q5_K) {
    const uint8_t* blk = w.data + row * w.row_bytes + (c / kChunksPerK) * kQ5KBlockBytes;
    const int sub = static_cast<int>(c % kChunksPerK);
    const int4* q = reinterpret_cast<const int4*>(blk + 48 + 32 * (sub / 2));
    const int4* qh = reinterpret_cast<const int4*>(blk + 16);
    const int4 a = q[0], b = q[1], ha = qh[0], hb = qh[1];
    const int vv[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    const int hh[8] = {ha.x, ha.y, ha.z, ha.w, hb.x, hb.y, hb.z, hb.w};
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
      const int hi = static_cast<int>(((static_cast<uint32_t>(hh[i]) >> sub) & kOnes) << 4);
      ch.w[i] = ((sub & 1) ? hi_nibbles(vv[i]) : lo_nibbles(vv[i])) | hi;
    }
    const half2 dm = *reinterpret_cast<const half2*>(blk);
    int sc, m;
    q4k_scale_min(sub, blk + 4, sc, m);
    ch.f0 = __low2float(dm) * static_cast<float>(sc);
    ch.f1 = __high2float(dm) * static_cast<float>(m);
  } else if constexpr (T == TensorType::Q2_K || T == TensorType::Q3_K) {
    // Chunk (h, j) of a super-block: plane j (bits 2j) of qs[32h .. 32h + 31].
    constexpr bool kQ2 = T == TensorType::Q2_K;
    const uint8_t* blk = w.data + row * w.row_bytes + (c / kChunksPerK) * (kQ2 ? kQ2KBlockBytes : kQ3KBlockBytes);
    const int within = static_cast<int>(c % kChunksPerK);
    const int h = within / 4, j = within % 4;
    const int4* q = reinterpret_cast<const int4*>(blk + (kQ2 ? 16 : 32) + 32 * h);
    const int4 a = q[0], b = q[1];
    const uint32_t vv[8] = {static_cast<uint32_t>(a.x), static_cast<uint32_t>(a.y), static_cast<uint32_t>(a.z),
                            static_cast<uint32_t>(a.w), static_cast<uint32_t>(b.x), static_cast<uint32_t>(b.y),
                            static_cast<uint32_t>(b.z), static_cast<uint32_t>(b.w)};
    const int is = 8 * h + 2 * j;  // the first of the chunk's two 16-element sub-blocks
    if constexpr (kQ2) {
#pragma unroll
      for (int i = 0; i < kWords; ++i) ch.w[i] = static_cast<int>((vv[i] >> (2 * j)) & 0x03030303u);
      const float d = __half2float(*reinterpret_cast<const half*>(blk + 80));
      const float dmin = __half2float(*reinterpret_cast<const half*>(blk + 82));
      ch.f0 = d * static_cast<float>(blk[is] & 0xF);
      ch.f1 = d * static_cast<float>(blk[is + 1] & 0xF);
      ch.f2 = dmin * static_cast<float>(blk[is] >> 4);
      ch.f3 = dmin * static_cast<float>(blk[is + 1] >> 4);
    } else {
      const int4* hm = reinterpret_cast<const int4*>(blk);
      const int4 ha = hm[0], hb = hm[1];
      const uint32_t hh[8] = {static_cast<uint32_t>(ha.x), static_cast<uint32_t>(ha.y), static_cast<uint32_t>(ha.z),
                              static_cast<uint32_t>(ha.w), static_cast<uint32_t>(hb.x), static_cast<uint32_t>(hb.y),
                              static_cast<uint32_t>(hb.z), static_cast<uint32_t>(hb.w)};
#pragma unroll
      for (int i = 0; i < kWords; ++i) {
        const uint32_t v = ((vv[i] >> (2 * j)) & 0x03030303u) | (((hh[i] >> (4 * h + j)) & kOnes) << 2);
        ch.w[i] = __vsubss4(static_cast<int>(v), 0x04040404);
      }
      const float d = __half2float(*reinterpret_cast<const half*>(blk + 108));
      const uint8_t* sc = blk + 96;
      auto scale = [&](int k) {
        const int low = k < 8 ? (sc[k] & 0xF) : (sc[k - 8] >> 4);
        return (low | (((sc[8 + k % 4] >> (2 * (k / 4))) & 3) << 4)) - 32;
      };
      ch.f0 = d * static_cast<float>(scale(is));
      ch.f1 = d * static_cast<float>(scale(is + 1));
    }
  } else if constexpr (T == TensorType::Q6_K) {
    const uint8_t* blk = w.data + row * w.row_bytes + (c / kChunksPerK) * kQ6KBlockBytes;
    const int within = static_cast<int>(c % kChunksPerK);
    const int h = within / 4, qtr = within % 4;
    const uint8_t* ql = blk + 64 * h + (qtr & 1) * 32;
    const uint8_t* qh = blk + 128 + 32 * h;
    const int shift_l = 4 * (qtr >> 1), shift_h = 2 * qtr;
#pragma unroll
    for (int i = 0; i < kWords; ++i) {
      const uint32_t l = (load_u32_2aligned(ql + 4 * i) >> shift_l) & 0x0F0F0F0Fu;
      const uint32_t hb = (load_u32_2aligned(qh + 4 * i) >> shift_h) & 0x03030303u;
      ch.w[i] = __vsubss4(static_cast<int>(l | (hb << 4)), 0x20202020);
    }
    const auto* sc = reinterpret_cast<const int8_t*>(blk + 192 + 8 * h + 2 * qtr);
    const float d = __half2float(*reinterpret_cast<const half*>(blk + 208));
    ch.f0 = d * static_cast<float>(sc[0]);
    ch.f1 = d * static_cast<float>(sc[1]);
  }
}

template <TensorType T>
__device__ __forceinline__ float dot_chunk(const Chunk& ch, const int8_t* aq, float ad, int asum, float as) {
  const int4* ap = reinterpret_cast<const int4*>(aq);
  const int4 a0 = ap[0], a1 = ap[1];
  const int a[kWords] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
  if constexpr (T == TensorType::Q6_K || T == TensorType::Q3_K || T == TensorType::Q2_K) {
    int s0 = 0, s1 = 0;
#pragma unroll
    for (int i = 0; i < kWords / 2; ++i) s0 = __dp4a(ch.w[i], a[i], s0);
#pragma unroll
    for (int i = kWords / 2; i < kWords; ++i) s1 = __dp4a(ch.w[i], a[i], s1);
    if constexpr (T == TensorType::Q2_K) {
      // The mins times the sums of each 16 activations.
      int a0 = 0, a1 = 0;
#pragma unroll
      for (int i = 0; i < kWords / 2; ++i) a0 = __dp4a(static_cast<int>(kOnes), a[i], a0);
#pragma unroll
      for (int i = kWords / 2; i < kWords; ++i) a1 = __dp4a(static_cast<int>(kOnes), a[i], a1);
      return ad * ((ch.f0 * static_cast<float>(s0) + ch.f1 * static_cast<float>(s1)) -
                   (ch.f2 * static_cast<float>(a0) + ch.f3 * static_cast<float>(a1)));
    }
    return ad * (ch.f0 * static_cast<float>(s0) + ch.f1 * static_cast<float>(s1));
  } else {
    int s = 0;
#pragma unroll
    for (int i = 0; i < kWords; ++i) s = __dp4a(ch.w[i], a[i], s);
    if constexpr (T == TensorType::Q4_K || T == TensorType::Q5_K) {
      return ad * (ch.f0 * static_cast<float>(s) - ch.f1 * static_cast<float>(asum));
    } else if constexpr (T == TensorType::Q4_1 || T == TensorType::Q5_1) {
      // The CPU's terms, each rounded: (d_w d_a) s + m_w s_a.
      return __fadd_rn(__fmul_rn(__fmul_rn(ch.f0, ad), static_cast<float>(s)), __fmul_rn(ch.f1, as));
    } else {
      return ch.f0 * ad * static_cast<float>(s);
    }
  }
}

template <TensorType T, int kCols>
__global__ void __launch_bounds__(kWarp * kRowsPerBlock)
    matmul_quant_kernel(const GpuMatrix w, const int8_t* __restrict__ aq, const float* __restrict__ ad,
                        const int32_t* __restrict__ asum, const float* __restrict__ as, int64_t m,
                        int64_t n_col_chunks, float* __restrict__ y, bool accumulate) {
  const int64_t col_chunk = blockIdx.x % n_col_chunks;
  const int64_t row = (blockIdx.x / n_col_chunks) * kRowsPerBlock + threadIdx.y;
  if (row >= w.n) return;
  const int64_t col0 = col_chunk * kCols;
  const int n_cols = static_cast<int>(min(static_cast<int64_t>(kCols), m - col0));
  const int64_t n_chunks = w.k / kChunk;
  const int lane = threadIdx.x;
  float acc[kCols];
#pragma unroll
  for (int t = 0; t < kCols; ++t) acc[t] = 0.0f;
#pragma unroll 2
  for (int64_t c = lane; c < n_chunks; c += kWarp) {
    Chunk ch;
    load_chunk<T>(w, row, c, n_chunks, ch);
#pragma unroll
    for (int t = 0; t < kCols; ++t) {
      if (t < n_cols) {
        const int64_t col = col0 + t;
        const int64_t b = col * n_chunks + c;
        acc[t] += dot_chunk<T>(ch, aq + col * w.k + c * kChunk, ad[b], asum[b], as != nullptr ? as[b] : 0.0f);
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kCols; ++t) {
    const float v = warp_sum(acc[t]);
    if (lane == 0 && t < n_cols) {
      float* out = y + (col0 + t) * w.n + row;
      *out = accumulate ? *out + v : v;
    }
  }
}

template <TensorType T, int kCols>
void launch(const GpuMatrix& w, const QuantAct& a, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  const int64_t n_col_chunks = (m + kCols - 1) / kCols;
  const int64_t row_blocks = (w.n + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t blocks = n_col_chunks * row_blocks;
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("matmul_quant: matrix too large for one launch");
  matmul_quant_kernel<T, kCols><<<static_cast<unsigned>(blocks), dim3(kWarp, kRowsPerBlock), 0, s>>>(
      w, a.qs, a.d, a.sums, a.s, m, n_col_chunks, y, accumulate);
  FERRITE_CUDA_LAUNCHED();
}

template <TensorType T>
void launch_type(const GpuMatrix& w, const QuantAct& a, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  // Few columns: one pass per column count; more: chunks of 8.
  switch (m) {
    case 1: launch<T, 1>(w, a, m, y, accumulate, s); break;
    case 2: launch<T, 2>(w, a, m, y, accumulate, s); break;
    case 3:
    case 4: launch<T, 4>(w, a, m, y, accumulate, s); break;
    default: launch<T, 8>(w, a, m, y, accumulate, s); break;
  }
}

}  // namespace

bool matmul_quant_supports(TensorType t) {
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

void matmul_quant(const GpuMatrix& w, const QuantAct& a, int64_t m, float* y, bool accumulate, cudaStream_t s) {
  if (m <= 0 || w.n == 0) return;
  if (w.k % kChunk != 0) throw InvalidArgument("matmul_quant: row length not a multiple of 32");
  switch (w.type) {
    case TensorType::Q4_0: launch_type<TensorType::Q4_0>(w, a, m, y, accumulate, s); break;
    case TensorType::Q8_0: launch_type<TensorType::Q8_0>(w, a, m, y, accumulate, s); break;
    case TensorType::Q4_1: launch_type<TensorType::Q4_1>(w, a, m, y, accumulate, s); break;
    case TensorType::Q5_0: launch_type<TensorType::Q5_0>(w, a, m, y, accumulate, s); break;
    case TensorType::Q5_1: launch_type<TensorType::Q5_1>(w, a, m, y, accumulate, s); break;
    case TensorType::Q4_K: launch_type<TensorType::Q4_K>(w, a, m, y, accumulate, s); break;
    case TensorType::Q6_K: launch_type<TensorType::Q6_K>(w, a, m, y, accumulate, s); break;
    case TensorType::Q5_K: launch_type<TensorType::Q5_K>(w, a, m, y, accumulate, s); break;
    case TensorType::Q3_K: launch_type<TensorType::Q3_K>(w, a, m, y, accumulate, s); break;
    case TensorType::Q2_K: launch_type<TensorType::Q2_K>(w, a, m, y, accumulate, s); break;
    default: throw InvalidArgument("matmul_quant: unsupported weight type " + tensor_type_name(w.type));
  }
}

}  // namespace ferrite::cuda
