// Quantized matrix products y [m, n] = x [m, k] · W^T on the int8 tensor
// cores (mma.sync, sm_80 and later) for batches of a few to a few hundred
// activation rows: the weights are read as they are stored (no dequantized
// copy), the activations in the 8-bit blocks of act_quant.cu.
//
// A block owns 64 weight rows (4 warps of 16) and up to 64 tokens (NT tiles
// of 8), and walks k one super-block (256 elements) per stage: all threads
// copy the stage's weight bytes and activations into shared memory with
// 16-byte cp.async copies, Stage::kCount stages in flight, and each warp
// multiplies its 16 rows by the block's tokens from shared memory
// (matmul_mma_tile.cuh: operand layout, per-type sums). Launches with fewer
// blocks than about two per SM split k across blocks; a second kernel adds
// the partial sums in split order, so results never depend on scheduling.
// Results differ from the CPU's in the last bits (f32 sums of another order).
#include <algorithm>
#include <string>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/matmul_mma_tile.cuh"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

using mma::Args;
using mma::kBlockRows;
using mma::kSbElems;
using mma::kThreads;
using mma::kTokTile;

constexpr int kMaxTokTiles = 8;  // tokens per block at most: 64
// Blocks per SM a launch aims at before it splits k.
constexpr int kBlocksPerSm = 2;
// Splits leave each block at least this many super-blocks.
constexpr int64_t kMinSbPerSplit = 4;

template <TensorType T, int NT>
__global__ void __launch_bounds__(kThreads) mma_kernel(const GpuMatrix w, const Args a) {
  using S = mma::Stage<T, NT>;
  extern __shared__ __align__(16) uint8_t smem[];

  // Blocks in order (row block, token block, split).
  const int64_t b = blockIdx.x;
  const int split = static_cast<int>(b % a.n_splits);
  const int64_t tile = b / a.n_splits;
  const int tb = static_cast<int>(tile % a.n_tok_blocks);
  const int64_t rb = tile / a.n_tok_blocks;
  const int64_t row0 = rb * kBlockRows;
  const int64_t tok0 = static_cast<int64_t>(tb) * S::kTokens;
  const int64_t n_sb = a.n_chunks / mma::kSbChunks;
  const int64_t sb0 = split * a.sb_per_split;
  const int n_it = static_cast<int>(min(n_sb, sb0 + a.sb_per_split) - sb0);

  const int lane = threadIdx.x % kWarp, g = lane / 4, t = lane % 4;
  const int64_t wrow0 = row0 + (threadIdx.x / kWarp) * mma::kWarpRows;
  const int64_t row_g = min(wrow0 + g, w.n - 1), row_g8 = min(wrow0 + g + 8, w.n - 1);

  mma::Stager<T, NT> stager;
  stager.init(w, a, row0, tok0);

  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;

  // Pipeline: stage it is computed while stages it+1 .. it+kCount-1 load.
#pragma unroll
  for (int st = 0; st < S::kCount - 1; ++st) {
    if (st < n_it) stager.issue(smem + st * S::kBytes, w, a, sb0 + st);
    mma::cp_async_commit();
  }
  for (int it = 0; it < n_it; ++it) {
    mma::cp_async_wait<S::kCount - 2>();
    __syncthreads();  // stage it is visible; every warp is done with stage it - 1, refilled next
    const int next = it + S::kCount - 1;
    if (next < n_it) stager.issue(smem + (next % S::kCount) * S::kBytes, w, a, sb0 + next);
    mma::cp_async_commit();
    mma::Warp<T, NT>::run(smem + (it % S::kCount) * S::kBytes, w, row_g, row_g8, sb0 + it, acc);
  }

  // Split k: partial sums [n_splits, m, n], added by add_splits_kernel.
  float* out = a.n_splits == 1 ? a.y : a.partials + split * a.m * w.n;
  const bool add = a.n_splits == 1 && a.accumulate;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int64_t row = wrow0 + g + 8 * (e / 2);
      const int64_t tok = tok0 + nt * kTokTile + 2 * t + (e & 1);
      if (row >= w.n || tok >= a.m) continue;
      float* o = out + tok * w.n + row;
      *o = add ? *o + acc[nt][e] : acc[nt][e];
    }
  }
}

// y [m, n] (+)= sum over splits of partials [n_splits, m, n], in split order.
__global__ void add_splits_kernel(const float* __restrict__ partials, int n_splits, int64_t count,
                                  float* __restrict__ y, bool accumulate) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  float v = partials[i];
  for (int s = 1; s < n_splits; ++s) v += partials[s * count + i];
  y[i] = accumulate ? y[i] + v : v;
}

int sm_count() {
  static const int count = [] {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) !=
                                                   cudaSuccess) {
      return 1;
    }
    return std::max(n, 1);
  }();
  return count;
}

bool device_has_int8_mma() {
  static const bool ok = [] {
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return false;
    return major >= 8;
  }();
  return ok;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

template <TensorType T, int NT>
void launch(const GpuMatrix& w, const Args& a, cudaStream_t s) {
  using S = mma::Stage<T, NT>;
  constexpr int kSmem = S::kBytes * S::kCount;
  // Past 48 KiB a kernel must opt in (once per instantiation).
  static const cudaError_t opted =
      cudaFuncSetAttribute(mma_kernel<T, NT>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  check_cuda(opted, "cudaFuncSetAttribute(matmul_mma shared memory)");
  const int64_t row_blocks = (w.n + kBlockRows - 1) / kBlockRows;
  const int64_t blocks = row_blocks * a.n_splits * a.n_tok_blocks;
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("matmul_mma: matrix too large for one launch");
  mma_kernel<T, NT><<<static_cast<unsigned>(blocks), kThreads, kSmem, s>>>(w, a);
  FERRITE_CUDA_LAUNCHED();
}

template <TensorType T>
void launch_type(const GpuMatrix& w, const Args& a, int nt, cudaStream_t s) {
  switch (nt) {
    case 1: launch<T, 1>(w, a, s); break;
    case 2: launch<T, 2>(w, a, s); break;
    case 4: launch<T, 4>(w, a, s); break;
    default: launch<T, kMaxTokTiles>(w, a, s); break;
  }
}

}  // namespace

bool matmul_mma_supports(const GpuMatrix& w) {
  // The kernel's copy offsets are 32-bit (mma::Stager).
  constexpr uint64_t kMaxBytes = uint64_t{1} << 32;
  if (!device_has_int8_mma() || w.k % kSbElems != 0) return false;
  if (static_cast<uint64_t>(w.n) * tensor_row_bytes(w.type, static_cast<uint64_t>(w.k)) >= kMaxBytes) return false;
  switch (w.type) {
    case TensorType::Q4_0:
    case TensorType::Q8_0:
      return aligned16(w.data) && aligned16(w.scales);
    case TensorType::Q4_K:
    case TensorType::Q5_K:
      return aligned16(w.data) && w.row_bytes % 16 == 0;
    case TensorType::Q6_K:
      // Stages copy the aligned vectors around each super-block (even offsets).
      return aligned16(w.data) && w.row_bytes % 2 == 0;
    default:
      // Q4_1, Q5_0, Q5_1, Q2_K, Q3_K have no tile code: LinearRunner routes
      // them to the GEMV in groups of rows or to dequantize + cuBLAS.
      return false;
  }
}

void matmul_mma(const GpuMatrix& w, const QuantAct& q, int64_t m, float* y, bool accumulate, DeviceBuffer& scratch,
                cudaStream_t s) {
  if (m <= 0 || w.n == 0) return;
  if (!matmul_mma_supports(w)) {
    throw InvalidArgument("matmul_mma: weight type " + tensor_type_name(w.type) + ", row length " +
                          std::to_string(w.k) + " or alignment not supported on this device");
  }
  if (!aligned16(q.qs) || !aligned16(q.d)) throw InvalidArgument("matmul_mma: activations not 16-byte aligned");
  if (static_cast<uint64_t>(m) * static_cast<uint64_t>(w.k) >= (uint64_t{1} << 32)) {
    throw InvalidArgument("matmul_mma: " + std::to_string(m) + " activation rows of " + std::to_string(w.k) +
                          " exceed 4 GiB");
  }
  Args a;
  a.aq = q.qs;
  a.ad = q.d;
  a.m = m;
  a.n_chunks = w.k / mma::kChunk;
  a.y = y;
  a.accumulate = accumulate;
  // Token tiles per block: the fewest of 1, 2, 4, 8 that hold m, else 8.
  int nt = 1;
  while (nt < kMaxTokTiles && nt * kTokTile < m) nt *= 2;
  const int64_t tokens = static_cast<int64_t>(nt) * kTokTile;
  a.n_tok_blocks = static_cast<int>((m + tokens - 1) / tokens);
  // Split k until the launch has about kBlocksPerSm blocks per SM.
  const int64_t n_sb = w.k / kSbElems;
  const int64_t row_blocks = (w.n + kBlockRows - 1) / kBlockRows;
  const int64_t base = row_blocks * a.n_tok_blocks;
  const int64_t want = static_cast<int64_t>(sm_count()) * kBlocksPerSm;
  int64_t splits = std::max<int64_t>(1, (want + base - 1) / base);
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, n_sb / kMinSbPerSplit));
  a.sb_per_split = (n_sb + splits - 1) / splits;
  a.n_splits = static_cast<int>((n_sb + a.sb_per_split - 1) / a.sb_per_split);
  if (a.n_splits > 1) {
    scratch.reserve(static_cast<size_t>(a.n_splits * m * w.n) * sizeof(float));
    a.partials = scratch.as<float>();
  }
  switch (w.type) {
    case TensorType::Q4_0: launch_type<TensorType::Q4_0>(w, a, nt, s); break;
    case TensorType::Q8_0: launch_type<TensorType::Q8_0>(w, a, nt, s); break;
    case TensorType::Q4_K: launch_type<TensorType::Q4_K>(w, a, nt, s); break;
    case TensorType::Q5_K: launch_type<TensorType::Q5_K>(w, a, nt, s); break;
    case TensorType::Q6_K: launch_type<TensorType::Q6_K>(w, a, nt, s); break;
    default: break;
  }
  if (a.n_splits > 1) {
    constexpr int kReduceThreads = 256;
    const int64_t count = m * w.n;
    add_splits_kernel<<<static_cast<unsigned>((count + kReduceThreads - 1) / kReduceThreads), kReduceThreads, 0, s>>>(
        a.partials, a.n_splits, count, y, accumulate);
    FERRITE_CUDA_LAUNCHED();
  }
}

}  // namespace ferrite::cuda
