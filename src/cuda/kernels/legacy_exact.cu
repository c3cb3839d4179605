// Pieces of the CPU's dequantized product (cpu/matmul.cpp, Operand::Dequant)
// for the exact mode: Q4_1/Q5_0/Q5_1 rows dequantized to f32 times the
// activations' 8-bit round trip in f32 (linear.cpp runs those through
// dequant.cu and matmul_float), then for Q4_1/Q5_1 the offset term
//   y += sum_b m_b corr_b,   corr_b = s_b - sum_j y_bj   (act_quant_q8_1_sum_correction)
// with every sum in the CPU's order: y_bj added in order within a block,
// the terms m_b corr_b (each rounded) added in block order, then one addition.
#include <cuda_fp16.h>

#include <string>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/iq_tables.h"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

constexpr int kBlock = 32;         // elements per activation block
constexpr int kRowThreads = 128;   // output rows per block of the offset kernel
constexpr int kStoreThreads = 256;

// Block (row block, token): corr of the token's blocks into shared memory,
// then one thread per weight row sums its terms.
__global__ void __launch_bounds__(kRowThreads)
    q8_1_offset_kernel(const GpuMatrix w, const int8_t* __restrict__ qs, const float* __restrict__ d,
                       const float* __restrict__ s, float* __restrict__ y) {
  extern __shared__ float corr[];  // [k / 32]
  const int64_t nb = w.k / kBlock;
  const int64_t t = blockIdx.y;
  for (int64_t b = threadIdx.x; b < nb; b += kRowThreads) {
    const int8_t* q = qs + t * w.k + b * kBlock;
    const float db = d[t * nb + b];
    float sum_y = 0.0f;
    for (int j = 0; j < kBlock; ++j) sum_y = __fadd_rn(sum_y, __fmul_rn(static_cast<float>(q[j]), db));
    corr[b] = __fsub_rn(s[t * nb + b], sum_y);
  }
  __syncthreads();
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowThreads + threadIdx.x;
  if (r >= w.n) return;
  float sum = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    const float m = __half2float(__ushort_as_half(w.scales[2 * (r * nb + b) + 1]));
    sum = __fadd_rn(sum, __fmul_rn(m, corr[b]));
  }
  float* out = y + t * w.n + r;
  *out = __fadd_rn(*out, sum);
}

__global__ void __launch_bounds__(kStoreThreads)
    store_columns_kernel(const float* __restrict__ src, int64_t m, int64_t cols, float* __restrict__ y, int64_t ldy,
                         bool accumulate) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kStoreThreads + threadIdx.x;
  if (i >= m * cols) return;
  float* out = y + (i / cols) * ldy + i % cols;
  *out = accumulate ? __fadd_rn(*out, src[i]) : src[i];
}

}  // namespace

bool exact_dequantized(TensorType t) {
  return t == TensorType::Q4_1 || t == TensorType::Q5_0 || t == TensorType::Q5_1 || iq_gpu_type(t);
}

void q8_1_offset_add(const GpuMatrix& w, const QuantAct& a, int64_t m, float* y, cudaStream_t s) {
  if (m == 0 || w.n == 0) return;
  if (w.type != TensorType::Q4_1 && w.type != TensorType::Q5_1) {
    throw InvalidArgument("q8_1_offset_add: weight type " + tensor_type_name(w.type) + " has no offset");
  }
  if (a.s == nullptr) throw InvalidArgument("q8_1_offset_add: the activations are not in the Q8_1 format");
  if (w.k % kBlock != 0) throw InvalidArgument("q8_1_offset_add: row length not a multiple of 32");
  constexpr int64_t kMaxTokens = 65535;  // grid y
  if (m > kMaxTokens) throw InvalidArgument("q8_1_offset_add: more than 65535 activation rows");
  const size_t smem = static_cast<size_t>(w.k / kBlock) * sizeof(float);
  constexpr size_t kMaxSmem = 48 * 1024;
  if (smem > kMaxSmem) throw InvalidArgument("q8_1_offset_add: row length " + std::to_string(w.k) + " too long");
  const dim3 grid(static_cast<unsigned>((w.n + kRowThreads - 1) / kRowThreads), static_cast<unsigned>(m));
  q8_1_offset_kernel<<<grid, kRowThreads, smem, s>>>(w, a.qs, a.d, a.s, y);
  FERRITE_CUDA_LAUNCHED();
}

void store_columns(const float* src, int64_t m, int64_t cols, float* y, int64_t ldy, bool accumulate,
                   cudaStream_t s) {
  const int64_t n = m * cols;
  if (n == 0) return;
  const int64_t blocks = (n + kStoreThreads - 1) / kStoreThreads;
  if (blocks > 0x7FFFFFFF) throw InvalidArgument("store_columns: too many values for one launch");
  store_columns_kernel<<<static_cast<unsigned>(blocks), kStoreThreads, 0, s>>>(src, m, cols, y, ldy, accumulate);
  FERRITE_CUDA_LAUNCHED();
}

}  // namespace ferrite::cuda
