// Quantized matrix-vector products for 1..kGemvMaxRows activation rows
// outside the exact mode (decode): y [m, n] (+)= x [m, k] · W^T on the 8-bit
// activation blocks (act_quant.cu), integer sums per 16 or 32 elements (dp4a)
// scaled in f32 and added in any order. Built for bandwidth:
// - one warp per weight row, kGemvWarps rows per block. A lane takes "tasks"
//   kWarp apart (Q4_0/Q8_0: one 32-element chunk; Q4_K: two sub-blocks that
//   share their 32 quant bytes; Q6_K: two 32-element quarters that share
//   their ql and qh bytes), so that one task slot of the warp covers
//   contiguous bytes of the row;
// - a lane issues the 16-byte loads of all kPerRound tasks of a round before
//   it uses any of them (a 4096-element row is one round: the whole matrix of
//   a 4096-row product is in flight at once), through the non-coherent path
//   without L1 allocation (weights are read once);
// - the activation rows (int8, d and sums per 32) are staged once per block
//   in shared memory, after the block issued its first weight loads. 16-byte units
//   are swizzled (unit v stored at v ^ ((v >> 3) & 3)) so that the 8 lanes of
//   a quarter-warp reading 2 or 4 consecutive units each hit distinct banks;
// - the block waits for the kernel before it (griddepcontrol.wait) only after
//   its weight loads are issued, so that with programmatic dependent launch
//   (pdl) the loads overlap the previous kernel's tail.
// Q6_K super-blocks (210 bytes) start at 2-byte offsets: a lane loads the
// aligned 48-byte windows around its two 32-byte spans and shifts them.
// The tasks of Q4_1, Q5_0, Q5_1, Q2_K, Q3_K and Q5_K are in gemv_tasks_more.cuh.
#include <cuda_fp16.h>

#include <string>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_math.cuh"
#include "cuda/kernels/moe_ops.h"
#include "cuda/kernels/ops.h"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/gemv_task.cuh"
#include "cuda/kernels/gemv_tasks_more.cuh"

namespace ferrite::cuda {
namespace gemv {

// Q4_0 (repacked: 16 quant bytes per chunk, f16 scales apart): one chunk.
// Byte i holds element i (low nibble) and i + 16 (high).
template <>
struct Task<TensorType::Q4_0> {
  static constexpr int kQ4Offset = 8;
  static constexpr int kMinBlocks = 4;  // blocks per SM the registers must allow (at most 64 a thread)
  static constexpr int kPerRound = 4;
  static constexpr bool kSums = true;
  static constexpr bool kQ81 = false;
  struct Raw {
    int4 q;
    uint32_t d;
  };
  static int64_t count(int64_t k) { return k / kChunk; }
  __device__ static RowPtr row(const GpuMatrix& w, int64_t r) {
    return {w.data + r * (w.k / kChunk) * 16, w.scales + r * (w.k / kChunk)};
  }
  __device__ static void load(const RowPtr& p, int task, Raw& r) {
    r.q = load_stream(p.q + task * 16);
    r.d = load_u16(p.s + task);
  }
  // sum((q - 8) a) = sum(q a) - 8 sum(a): the nibbles go to dp4a as they are.
  __device__ static float dot(const Raw& r, const ActRow& a, int task) {
    const int4 a0 = a.unit(2 * task), a1 = a.unit(2 * task + 1);
    const int q[4] = {r.q.x, r.q.y, r.q.z, r.q.w};
    int lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      lo[i] = q[i] & kLow4;
      hi[i] = (q[i] >> 4) & kLow4;
    }
    const int s = dot4(hi, a1, dot4(lo, a0, 0)) - kQ4Offset * a.sums[task];
    return f16_bits(r.d) * a.d[task] * static_cast<float>(s);
  }
};

// Q8_0 (repacked: 32 quant bytes per chunk, f16 scales apart): one chunk.
template <>
struct Task<TensorType::Q8_0> {
  static constexpr int kMinBlocks = 4;  // blocks per SM the registers must allow (at most 64 a thread)
  static constexpr int kPerRound = 4;
  static constexpr bool kSums = false;
  static constexpr bool kQ81 = false;
  struct Raw {
    int4 q0, q1;
    uint32_t d;
  };
  static int64_t count(int64_t k) { return k / kChunk; }
  __device__ static RowPtr row(const GpuMatrix& w, int64_t r) {
    return {w.data + r * (w.k / kChunk) * 32, w.scales + r * (w.k / kChunk)};
  }
  __device__ static void load(const RowPtr& p, int task, Raw& r) {
    r.q0 = load_stream(p.q + task * 32);
    r.q1 = load_stream(p.q + task * 32 + 16);
    r.d = load_u16(p.s + task);
  }
  __device__ static float dot(const Raw& r, const ActRow& a, int task) {
    const int q0[4] = {r.q0.x, r.q0.y, r.q0.z, r.q0.w}, q1[4] = {r.q1.x, r.q1.y, r.q1.z, r.q1.w};
    const int s = dot4(q1, a.unit(2 * task + 1), dot4(q0, a.unit(2 * task), 0));
    return f16_bits(r.d) * a.d[task] * static_cast<float>(s);
  }
};

// Q4_K: sub-blocks 2p (low nibbles) and 2p + 1 (high) of a super-block,
// quant bytes 32p .. 32p + 31; task = 4 * super-block + p.
//   d_a (d (sc0 s0 + sc1 s1) - dmin (m0 sum0 + m1 sum1))
template <>
struct Task<TensorType::Q4_K> {
  static constexpr int kMinBlocks = 4;  // blocks per SM the registers must allow (at most 64 a thread)
  static constexpr int kPerRound = 2;
  static constexpr bool kSums = true;
  static constexpr bool kQ81 = false;
  struct Raw {
    int4 head;  // d, dmin, scales[12]
    int4 q0, q1;
  };
  static int64_t count(int64_t k) { return 4 * (k / kSbElems); }
  __device__ static RowPtr row(const GpuMatrix& w, int64_t r) { return {w.data + r * w.row_bytes, nullptr}; }
  __device__ static void load(const RowPtr& p, int task, Raw& r) {
    const uint8_t* blk = p.q + (task / 4) * kQ4KBytes;
    r.head = load_stream(blk);
    r.q0 = load_stream(blk + 16 + 32 * (task % 4));
    r.q1 = load_stream(blk + 32 + 32 * (task % 4));
  }
  __device__ static float dot(const Raw& r, const ActRow& a, int task) {
    const int p = task % 4;
    const int q[8] = {r.q0.x, r.q0.y, r.q0.z, r.q0.w, r.q1.x, r.q1.y, r.q1.z, r.q1.w};
    int lo[2][4], hi[2][4];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      lo[i / 4][i % 4] = q[i] & kLow4;
      hi[i / 4][i % 4] = (q[i] >> 4) & kLow4;
    }
    const int u = 4 * task;  // first activation unit (64 elements per task)
    const int s0 = dot4(lo[1], a.unit(u + 1), dot4(lo[0], a.unit(u), 0));
    const int s1 = dot4(hi[1], a.unit(u + 3), dot4(hi[0], a.unit(u + 2), 0));
    return k_task_value(r.head, p, s0, s1, a, 2 * task);
  }
};

// Q6_K: half h of a super-block, quarters p (low nibbles of ql[64h + 32p ..],
// qh bits 2p) and p + 2 (high nibbles, qh bits 2p + 4); task = 4 sb + 2h + p.
// Each quarter has two 16-element scales.
template <>
struct Task<TensorType::Q6_K> {
  static constexpr int kMinBlocks = 2;  // blocks per SM the registers must allow (at most 128 a thread)
  static constexpr int kPerRound = 2;
  static constexpr bool kSums = false;
  static constexpr bool kQ81 = false;
  struct Raw {
    int4 l[3], h[3];      // aligned windows around ql and qh spans
    uint32_t sc_a, sc_b;  // scale bytes of quarter p, of quarter p + 2
    uint32_t d;
    int shift;            // byte offset of the spans in their windows
  };
  static int64_t count(int64_t k) { return 4 * (k / kSbElems); }
  __device__ static RowPtr row(const GpuMatrix& w, int64_t r) { return {w.data + r * w.row_bytes, nullptr}; }
  __device__ static void load(const RowPtr& rp, int task, Raw& r) {
    const uint8_t* blk = rp.q + (task / 4) * kQ6KBytes;
    const int h = task / 2 % 2, p = task % 2;
    const uint8_t* ql = blk + 64 * h + 32 * p;
    const uint8_t* qh = blk + 128 + 32 * h;
    r.shift = static_cast<int>(reinterpret_cast<uintptr_t>(blk) & 15);
    const uint8_t* lb = ql - r.shift;
    const uint8_t* hb = qh - r.shift;
#pragma unroll
    for (int i = 0; i < 3; ++i) {
      r.l[i] = load_stream(lb + 16 * i);
      r.h[i] = load_stream(hb + 16 * i);
    }
    r.sc_a = load_u16(blk + kQ6KScales + 8 * h + 2 * p);
    r.sc_b = load_u16(blk + kQ6KScales + 8 * h + 2 * p + 4);
    r.d = load_u16(blk + kQ6KD);
  }
  __device__ static float dot(const Raw& r, const ActRow& a, int task) {
    const int p = task % 2;
    uint32_t l[8], hb[8];
    window32(r.l, r.shift, l);
    window32(r.h, r.shift, hb);
    int wa[2][4], wb[2][4];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t ha = (hb[i] >> (2 * p)) & kLow2, hc = (hb[i] >> (2 * p + 4)) & kLow2;
      wa[i / 4][i % 4] = minus32((l[i] & kLow4) | (ha << 4));
      wb[i / 4][i % 4] = minus32(((l[i] >> 4) & kLow4) | (hc << 4));
    }
    // Chunks of the two quarters within the row.
    const int ca = 8 * (task / 4) + 4 * (task / 2 % 2) + p, cb = ca + 2;
    const int sa0 = dot4(wa[0], a.unit(2 * ca), 0), sa1 = dot4(wa[1], a.unit(2 * ca + 1), 0);
    const int sb0 = dot4(wb[0], a.unit(2 * cb), 0), sb1 = dot4(wb[1], a.unit(2 * cb + 1), 0);
    const auto sc = [](uint32_t v, int byte) { return static_cast<int>(static_cast<int8_t>(v >> (8 * byte))); };
    const int isum = sc(r.sc_a, 0) * sa0 + sc(r.sc_a, 1) * sa1 + sc(r.sc_b, 0) * sb0 + sc(r.sc_b, 1) * sb1;
    return a.d[ca] * f16_bits(r.d) * static_cast<float>(isum);
  }
};

// Units of one staged activation row (a whole number of swizzle groups).
__host__ __device__ constexpr int64_t units_per_row(int64_t k) {
  return (k / kUnit + kUnitGroup - 1) / kUnitGroup * kUnitGroup;
}

template <TensorType T>
size_t stage_bytes(int64_t k, int64_t m) {
  const int64_t per_chunk = 1 + (Task<T>::kSums ? 1 : 0) + (Task<T>::kQ81 ? 1 : 0);  // d, sums, s
  const int64_t scalars = per_chunk * (k / kChunk) * static_cast<int64_t>(sizeof(float));
  return static_cast<size_t>(m * (units_per_row(k) * kUnit + scalars));
}

// Blocks per SM the registers of the kernel for M activation rows must allow.
template <TensorType T, int M>
constexpr int min_blocks() {
  if (M == 1) return Task<T>::kMinBlocks;
  // Q6_K, and Q5_K/Q3_K (five 16-byte loads per task) spill at 80 registers: 128.
  if (T == TensorType::Q6_K || T == TensorType::Q5_K || T == TensorType::Q3_K) return 2;
  return Task<T>::kMinBlocks < kMinBlocksMulti ? Task<T>::kMinBlocks : kMinBlocksMulti;
}

// The expert of gemv_quant_experts (moe_ops.h): block row blockIdx.y is
// slot j, which multiplies rows [ids[j] * rows, + rows) of the stacked w by
// activation row j * act_step into y row j (split > 0: output r of slot j
// at (r / split * n_slots + j) * split + r % split).
struct ExpertSel {
  const int32_t* ids = nullptr;
  int64_t rows = 0;
  int64_t act_step = 0;
  int64_t split = 0;
};

// The Q|K|V outputs row0 .. row0 + kGemvWarps - 1 of a block, warp w's
// sum v (every thread of the block calls it; all its rows are outputs):
// rope_store_kv_kernel's arithmetic on pairs (2i, 2i + 1) of a head, which
// are warps w and w ^ 1 (head_dim is a multiple of kGemvWarps).
__device__ __forceinline__ void rope_epilogue(const RopeKvOut& r, float* y, int64_t row0, float v) {
  __shared__ float vals[kGemvWarps];
  const int warp = static_cast<int>(threadIdx.x) / kWarp, lane = static_cast<int>(threadIdx.x) % kWarp;
  if (lane == 0) vals[warp] = v;
  __syncthreads();
  if (threadIdx.x >= kGemvWarps) return;
  const int j = static_cast<int>(threadIdx.x);
  const int64_t row = row0 + j;
  const float x = vals[j];
  if (row >= r.n_q + r.n_kv) {  // v
    y[row] = x;
    r.v_cache[static_cast<int64_t>(r.slot[0]) * r.n_kv + (row - r.n_q - r.n_kv)] = __half_as_ushort(__float2half_rn(x));
    return;
  }
  const int64_t d = row % r.head_dim;
  float out = x;
  if (d < 2 * r.half) {
    const int64_t i = d / 2;
    const float c = r.cos_t[i], s = r.sin_t[i];
    const float x0 = vals[j & ~1], x1 = vals[j | 1];
    out = d % 2 == 0 ? __fmaf_rn(x0, c, -(x1 * s)) : __fmaf_rn(x0, s, x1 * c);
  }
  y[row] = out;
  if (row >= r.n_q) {
    r.k_cache[static_cast<int64_t>(r.slot[0]) * r.n_kv + (row - r.n_q)] = __half_as_ushort(__float2half_rn(out));
  }
}

// The expert variant keeps a few more values live (slot, expert row): it
// gets the multi-row kernels' register budget where that is larger (no
// spills for Q8_0/Q5_1).
template <TensorType T, int M, bool kExperts>
constexpr int min_blocks_of() {
  return kExperts && min_blocks<T, M>() > kMinBlocksMulti ? kMinBlocksMulti : min_blocks<T, M>();
}

// kRope: one activation row, Q|K|V rows, outputs rotated and k, v stored
// as gemv_quant_rope says (ops.h).
template <TensorType T, int M, bool kExperts = false, bool kRope = false>
__global__ void __launch_bounds__(kGemvThreads,
                                  min_blocks_of<T, M, kExperts>())
    gemv_quant_kernel(const GpuMatrix w, const QuantAct a_in, int n_tasks, float* __restrict__ y_in, bool accumulate,
                      const ExpertSel sel, const RopeKvOut rope) {
  static_assert(!kRope || (M == 1 && !kExperts), "the fused RoPE is for one token");
  using Tk = Task<T>;
  constexpr int kU = Tk::kPerRound;
  extern __shared__ int4 stage[];  // [M][units] int8, then d [M][k/32], then sums [M][k/32] and/or s [M][k/32]
  const int warp = static_cast<int>(threadIdx.x) / kWarp, lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kGemvWarps + warp;
  int64_t n_out = w.n, row0 = 0;  // outputs per activation row, first weight row
  QuantAct a = a_in;
  float* y = y_in;
  if constexpr (kExperts) {
    // The expert id comes from an earlier kernel: wait before reading it
    // (no weight load can be issued ahead of that).
    grid_dependency_wait();
    const int64_t slot = blockIdx.y, step = slot * sel.act_step, per_row = w.k / kChunk;
    n_out = sel.rows;
    row0 = static_cast<int64_t>(sel.ids[slot]) * sel.rows;
    a.qs += step * w.k;
    a.d += step * per_row;
    a.sums += step * per_row;
    if (a.s != nullptr) a.s += step * per_row;
  }
  const bool active = row < n_out;
  const int n_chunks = static_cast<int>(w.k / kChunk), n_units = static_cast<int>(w.k / kUnit);
  const int row_units = static_cast<int>(units_per_row(w.k));
  const RowPtr rp = Tk::row(w, row0 + (active ? row : 0));
  auto load_round = [&](int base, typename Tk::Raw (&raw)[kU]) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int t = base + lane + kWarp * u;
      if (t < n_tasks) Tk::load(rp, t, raw[u]);
    }
  };

  // 1. This warp's first round of weights (weights do not depend on earlier kernels).
  typename Tk::Raw raw[kU];
  if (active) load_round(0, raw);
  // 2. The activations, once the kernel that wrote them is done.
  grid_dependency_wait();
  auto* d_stage = reinterpret_cast<float*>(stage + M * row_units);
  auto* s_stage = reinterpret_cast<int32_t*>(d_stage + M * n_chunks);
  auto* o_stage = reinterpret_cast<float*>(s_stage + (Tk::kSums ? M * n_chunks : 0));  // Q8_1 s
  for (int i = static_cast<int>(threadIdx.x); i < M * n_units; i += kGemvThreads) {
    const int t = i / n_units, v = i % n_units;
    stage[t * row_units + (v ^ ((v >> 3) & 3))] = reinterpret_cast<const int4*>(a.qs + t * w.k)[v];
  }
  for (int i = static_cast<int>(threadIdx.x); i < M * n_chunks; i += kGemvThreads) {
    d_stage[i] = a.d[i];
    if constexpr (Tk::kSums) s_stage[i] = a.sums[i];
    if constexpr (Tk::kQ81) o_stage[i] = a.s[i];
  }
  __syncthreads();
  if (!active) {
    launch_dependents();
    return;
  }

  // 3. Round by round.
  float acc[M];
#pragma unroll
  for (int t = 0; t < M; ++t) acc[t] = 0.0f;
  for (int base = 0;;) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int task = base + lane + kWarp * u;
      if (task < n_tasks) {
#pragma unroll
        for (int t = 0; t < M; ++t) {
          const ActRow ar{stage + t * row_units, d_stage + t * n_chunks, s_stage + t * n_chunks,
                          o_stage + t * n_chunks};
          acc[t] += Tk::dot(raw[u], ar, task);
        }
      }
    }
    base += kWarp * kU;
    if (base >= n_tasks) break;
    load_round(base, raw);
  }
  launch_dependents();
  if constexpr (kRope) {
    rope_epilogue(rope, y, static_cast<int64_t>(blockIdx.x) * kGemvWarps, warp_sum(acc[0]));
  } else {
#pragma unroll
    for (int t = 0; t < M; ++t) {
      const float v = warp_sum(acc[t]);
      if (lane == 0) {
        int64_t o = t * n_out + row;
        if constexpr (kExperts) {
          const int64_t slot = blockIdx.y;
          o = sel.split > 0 ? (row / sel.split * gridDim.y + slot) * sel.split + row % sel.split : slot * n_out + row;
        }
        float* out = y + o;
        *out = accumulate ? *out + v : v;
      }
    }
  }
}

template <TensorType T, int M>
void launch(const GpuMatrix& w, const QuantAct& a, float* y, bool accumulate, bool pdl, cudaStream_t s) {
  const size_t smem = stage_bytes<T>(w.k, M);
  auto kernel = gemv_quant_kernel<T, M>;
  if (smem > kDefaultSmem) {
    FERRITE_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  }
  const int64_t blocks = (w.n + kGemvWarps - 1) / kGemvWarps;
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("gemv_quant: matrix too large for one launch");
  launch_kernel(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kGemvThreads), smem, s, pdl, w, a,
                static_cast<int>(Task<T>::count(w.k)), y, accumulate, ExpertSel{}, RopeKvOut{});
}

template <TensorType T>
void launch_rope(const GpuMatrix& w, const QuantAct& a, float* y, const RopeKvOut& r, bool pdl, cudaStream_t s) {
  const size_t smem = stage_bytes<T>(w.k, 1);
  auto kernel = gemv_quant_kernel<T, 1, false, true>;
  if (smem > kDefaultSmem) {
    FERRITE_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  }
  launch_kernel(kernel, dim3(static_cast<unsigned>(w.n / kGemvWarps)), dim3(kGemvThreads), smem, s, pdl, w, a,
                static_cast<int>(Task<T>::count(w.k)), y, false, ExpertSel{}, r);
}

// One activation row per slot: grid (row blocks of an expert, slots).
template <TensorType T>
void launch_experts(const GpuMatrix& w, const ExpertSel& sel, int64_t n_slots, const QuantAct& a, float* y, bool pdl,
                    cudaStream_t s) {
  const size_t smem = stage_bytes<T>(w.k, 1);
  auto kernel = gemv_quant_kernel<T, 1, true>;
  if (smem > kDefaultSmem) {
    FERRITE_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  }
  const int64_t blocks = (sel.rows + kGemvWarps - 1) / kGemvWarps;
  if (blocks > 0x7FFFFFFF || n_slots > 0xFFFF) throw InvalidArgument("gemv_quant_experts: too large for one launch");
  launch_kernel(kernel, dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(n_slots)), dim3(kGemvThreads), smem,
                s, pdl, w, a, static_cast<int>(Task<T>::count(w.k)), y, false, sel, RopeKvOut{});
}

template <TensorType T>
void launch_type(const GpuMatrix& w, const QuantAct& a, int64_t m, float* y, bool accumulate, bool pdl,
                 cudaStream_t s) {
  switch (m) {
    case 1: launch<T, 1>(w, a, y, accumulate, pdl, s); break;
    case 2: launch<T, 2>(w, a, y, accumulate, pdl, s); break;
    case 3: launch<T, 3>(w, a, y, accumulate, pdl, s); break;
    default: launch<T, 4>(w, a, y, accumulate, pdl, s); break;
  }
}

size_t stage_bytes_of(TensorType t, int64_t k, int64_t m) {
  switch (t) {
    case TensorType::Q4_0: return stage_bytes<TensorType::Q4_0>(k, m);
    case TensorType::Q8_0: return stage_bytes<TensorType::Q8_0>(k, m);
    case TensorType::Q4_K: return stage_bytes<TensorType::Q4_K>(k, m);
    case TensorType::Q6_K: return stage_bytes<TensorType::Q6_K>(k, m);
    case TensorType::Q4_1: return stage_bytes<TensorType::Q4_1>(k, m);
    case TensorType::Q5_0: return stage_bytes<TensorType::Q5_0>(k, m);
    case TensorType::Q5_1: return stage_bytes<TensorType::Q5_1>(k, m);
    case TensorType::Q2_K: return stage_bytes<TensorType::Q2_K>(k, m);
    case TensorType::Q3_K: return stage_bytes<TensorType::Q3_K>(k, m);
    case TensorType::Q5_K: return stage_bytes<TensorType::Q5_K>(k, m);
    default: return 0;
  }
}

}  // namespace gemv

bool gemv_quant_supports(const GpuMatrix& w, int64_t m) {
  using namespace gemv;
  if (m < 1 || m > kGemvMaxRows || w.k <= 0) return false;
  const auto addr = reinterpret_cast<uintptr_t>(w.data);
  switch (w.type) {
    case TensorType::Q4_0:
    case TensorType::Q8_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
      if (w.k % kChunk != 0 || addr % 16 != 0) return false;
      break;
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
      if (w.k % kSbElems != 0 || addr % 16 != 0 || w.row_bytes % 16 != 0) return false;
      break;
    case TensorType::Q6_K:
      if (w.k % kSbElems != 0 || addr % 2 != 0) return false;
      break;
    default:
      return false;
  }
  return stage_bytes_of(w.type, w.k, m) <= static_cast<size_t>(kMaxStageBytes);
}

void gemv_quant(const GpuMatrix& w, const QuantAct& a, int64_t m, float* y, bool accumulate, bool pdl,
                cudaStream_t s) {
  using namespace gemv;
  if (m <= 0 || w.n == 0) return;
  if (!gemv_quant_supports(w, m)) {
    throw InvalidArgument("gemv_quant: unsupported " + tensor_type_name(w.type) + " matrix of row length " +
                          std::to_string(w.k) + " for " + std::to_string(m) + " activation rows");
  }
  switch (w.type) {
    case TensorType::Q4_0: launch_type<TensorType::Q4_0>(w, a, m, y, accumulate, pdl, s); break;
    case TensorType::Q8_0: launch_type<TensorType::Q8_0>(w, a, m, y, accumulate, pdl, s); break;
    case TensorType::Q4_K: launch_type<TensorType::Q4_K>(w, a, m, y, accumulate, pdl, s); break;
    case TensorType::Q6_K: launch_type<TensorType::Q6_K>(w, a, m, y, accumulate, pdl, s); break;
    case TensorType::Q4_1: launch_type<TensorType::Q4_1>(w, a, m, y, accumulate, pdl, s); break;
    case TensorType::Q5_0: launch_type<TensorType::Q5_0>(w, a, m, y, accumulate, pdl, s); break;
    case TensorType::Q5_1: launch_type<TensorType::Q5_1>(w, a, m, y, accumulate, pdl, s); break;
    case TensorType::Q2_K: launch_type<TensorType::Q2_K>(w, a, m, y, accumulate, pdl, s); break;
    case TensorType::Q3_K: launch_type<TensorType::Q3_K>(w, a, m, y, accumulate, pdl, s); break;
    default: launch_type<TensorType::Q5_K>(w, a, m, y, accumulate, pdl, s); break;
  }
}

bool gemv_rope_supports(const GpuMatrix& w, const RopeKvOut& r) {
  using namespace gemv;
  return gemv_quant_supports(w, 1) && r.head_dim > 0 && r.head_dim % kGemvWarps == 0 && r.half >= 0 &&
         2 * r.half <= r.head_dim && r.n_q % r.head_dim == 0 && r.n_kv % r.head_dim == 0 &&
         w.n == r.n_q + 2 * r.n_kv && w.n / kGemvWarps <= 0x7FFFFFFF && r.slot != nullptr && r.k_cache != nullptr &&
         r.v_cache != nullptr && (r.half == 0 || (r.cos_t != nullptr && r.sin_t != nullptr));
}

void gemv_quant_rope(const GpuMatrix& w, const QuantAct& a, float* y, const RopeKvOut& r, bool pdl, cudaStream_t s) {
  using namespace gemv;
  if (!gemv_rope_supports(w, r)) {
    throw InvalidArgument("gemv_quant_rope: unsupported " + tensor_type_name(w.type) + " product of " +
                          std::to_string(w.n) + " rows for heads of " + std::to_string(r.head_dim));
  }
  switch (w.type) {
    case TensorType::Q4_0: launch_rope<TensorType::Q4_0>(w, a, y, r, pdl, s); break;
    case TensorType::Q8_0: launch_rope<TensorType::Q8_0>(w, a, y, r, pdl, s); break;
    case TensorType::Q4_K: launch_rope<TensorType::Q4_K>(w, a, y, r, pdl, s); break;
    case TensorType::Q6_K: launch_rope<TensorType::Q6_K>(w, a, y, r, pdl, s); break;
    case TensorType::Q4_1: launch_rope<TensorType::Q4_1>(w, a, y, r, pdl, s); break;
    case TensorType::Q5_0: launch_rope<TensorType::Q5_0>(w, a, y, r, pdl, s); break;
    case TensorType::Q5_1: launch_rope<TensorType::Q5_1>(w, a, y, r, pdl, s); break;
    case TensorType::Q2_K: launch_rope<TensorType::Q2_K>(w, a, y, r, pdl, s); break;
    case TensorType::Q3_K: launch_rope<TensorType::Q3_K>(w, a, y, r, pdl, s); break;
    default: launch_rope<TensorType::Q5_K>(w, a, y, r, pdl, s); break;
  }
}

bool gemv_quant_experts_supports(const GpuMatrix& w) { return gemv_quant_supports(w, 1); }

void gemv_quant_experts(const GpuMatrix& w, const int32_t* ids, int64_t n_slots, int64_t rows, const QuantAct& a,
                        int64_t act_step, float* y, bool pdl, cudaStream_t s, int64_t split) {
  using namespace gemv;
  if (!gemv_quant_experts_supports(w)) {
    throw InvalidArgument("gemv_quant_experts: unsupported " + tensor_type_name(w.type) + " matrix of row length " +
                          std::to_string(w.k));
  }
  if (rows <= 0 || w.n % rows != 0 || split < 0 || (split > 0 && rows % split != 0)) {
    throw InvalidArgument("gemv_quant_experts: rows do not divide the matrix");
  }
  if (n_slots <= 0) return;
  const ExpertSel sel{ids, rows, act_step, split};
  switch (w.type) {
    case TensorType::Q4_0: launch_experts<TensorType::Q4_0>(w, sel, n_slots, a, y, pdl, s); break;
    case TensorType::Q8_0: launch_experts<TensorType::Q8_0>(w, sel, n_slots, a, y, pdl, s); break;
    case TensorType::Q4_K: launch_experts<TensorType::Q4_K>(w, sel, n_slots, a, y, pdl, s); break;
    case TensorType::Q6_K: launch_experts<TensorType::Q6_K>(w, sel, n_slots, a, y, pdl, s); break;
    case TensorType::Q4_1: launch_experts<TensorType::Q4_1>(w, sel, n_slots, a, y, pdl, s); break;
    case TensorType::Q5_0: launch_experts<TensorType::Q5_0>(w, sel, n_slots, a, y, pdl, s); break;
    case TensorType::Q5_1: launch_experts<TensorType::Q5_1>(w, sel, n_slots, a, y, pdl, s); break;
    case TensorType::Q2_K: launch_experts<TensorType::Q2_K>(w, sel, n_slots, a, y, pdl, s); break;
    case TensorType::Q3_K: launch_experts<TensorType::Q3_K>(w, sel, n_slots, a, y, pdl, s); break;
    default: launch_experts<TensorType::Q5_K>(w, sel, n_slots, a, y, pdl, s); break;
  }
}

}  // namespace ferrite::cuda
