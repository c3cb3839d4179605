// Linear layers on the GPU: y [m, n] (+)= x [m, k] · W^T (+ bias), choosing
// the product by weight type: quantized types through 8-bit activations and
// matmul_quant (the CPU's arithmetic), F16 and F32 through matmul_float
// (f16 operands rounded as the CPU rounds them, f32 sums). Prefill (more
// than kGemmMinRows activation rows) goes through cuBLAS instead: quantized
// weights dequantized to f16 into a reusable scratch matrix (dequant.cu),
// F16 weights as they are, f32 accumulation (tensor cores); the activations
// rounded to f16 (F16 weights, as the CPU does) or through the 8-bit blocks
// the CPU's quantized products use, then to f16 (quantized weights). set_exact_products(true) (or FERRITE_CUDA_EXACT=1) keeps
// the CPU's arithmetic for every batch; outside it, F16 weights of smaller
// batches take a warp-per-row product in any order (matmul_f16_fast.cu).
// F32 weights take the CPU's product (matmul_float). Outside the exact
// mode, quantized weights of batches of kMmaMinRows..kMmaMaxRows rows take
// the int8 tensor-core product (matmul_mma.cu) instead of both, on devices
// that have it; set_mma_rows (the switch FERRITE_CUDA_MMA_ROWS=LO:HI) sets that range.
// Outside the exact mode, quantized weights of 1..kGemvMaxRows rows (decode)
// take the bandwidth GEMV (gemv_quant.cu), F16 weights its F16 counterpart;
// weight types matmul_mma does not take (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K) take
// it in groups of kGemvMaxRows rows up to kGemmMinRows rows too; the IQ
// and TQ types take their own GEMV (gemv_iq.cu) for 1..kGemmMinRows rows.
// (The earlier kernels, for comparisons: bench/cuda.) Both are launched as
// programmatic dependents of the kernel before them (pdl.cuh) where
// pdl_enabled().
// In the exact mode the IQ/TQ types take the dequantized product (ops.h
// exact_dequantized: f32 rows, matmul_float's order), the other quantized
// types matmul_quant.
// An Activation caches its converted forms (8-bit blocks, f16) until its
// values change, so Q, K and V (or gate and up) convert their input once; a
// kernel that writes x can also write a converted form itself (fused_ops.cu)
// into the buffers quant_buffers() / f16_buffer() give and mark it made.
#pragma once

#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cuda/kernels/device_buffer.h"
#include "cuda/kernels/gpu_matrix.h"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {

// Activation rows above which prefill takes the cuBLAS product.
constexpr int64_t kGemmMinRows = 16;
// Activation rows the int8 tensor-core product takes by default (H100,
// bench/cuda/NOTES.md 2026-11-24: from 5 rows it beats the dp4a kernel, up to
// 128 dequantize + cuBLAS on a 7B Q4_K_M mix; past that cuBLAS wins).
constexpr int64_t kMmaMinRows = 5;
constexpr int64_t kMmaMaxRows = 128;

class Activation {
 public:
  // Points at device values [m, k] and forgets earlier conversions.
  void set(float* x, int64_t m, int64_t k) {
    x_ = x;
    m_ = m;
    k_ = k;
    changed();
  }
  // Call after writing new values into x().
  void changed() {
    for (int i = 0; i < kActFormats; ++i) have_q_[i] = have_via_[i] = false;
    have_f16_ = false;
  }

  float* x() const { return x_; }
  int64_t m() const { return m_; }
  int64_t k() const { return k_; }

  // The activations quantized for weights of type t (converted once).
  QuantAct quantized(ActFormat f, cudaStream_t s);
  // The buffers quantized(f) fills, reserved for [m, k]; after a kernel
  // launched on the runner's stream writes them, mark_quantized(f).
  QuantAct quant_buffers(ActFormat f);
  void mark_quantized(ActFormat f) { have_q_[static_cast<int>(f)] = true; }
  // The buffer f16() fills, reserved for [m, k]; mark_f16() once written.
  uint16_t* f16_buffer();
  void mark_f16() { have_f16_ = true; }
  // The activations as f16 (converted once).
  const uint16_t* f16(cudaStream_t s);
  // The activations quantized in format f, taken back to f16 (converted once).
  const uint16_t* f16_via(ActFormat f, cudaStream_t s);

 private:
  float* x_ = nullptr;
  int64_t m_ = 0, k_ = 0;
  bool have_q_[kActFormats] = {};
  bool have_f16_ = false;
  bool have_via_[kActFormats] = {};
  DeviceBuffer qs_[kActFormats], d_[kActFormats], sums_[kActFormats], s_, f16_, via_[kActFormats];
};

// Sets out to the input form a product with weights of type t reads from
// act (8-bit blocks or f16), for a row kernel to write beside its output
// (kernels/fused_ops.cu); false where there is none or the row length does
// not fit it. After such a kernel, mark_made(act, out).
bool fused_out(TensorType t, Activation& act, ActOut& out);
void mark_made(Activation& act, const ActOut& out);

class LinearRunner {
 public:
  explicit LinearRunner(cudaStream_t stream);
  ~LinearRunner();
  LinearRunner(const LinearRunner&) = delete;
  LinearRunner& operator=(const LinearRunner&) = delete;

  // y [a.m(), w.n] = a · W^T (+ bias [w.n] when not null); accumulate: y += instead.
  // rope: the stacked Q|K|V product of one token that also rotates q, k and
  // stores k, v (gemv_quant_rope, ops.h), where takes_rope(w, a.m(), *rope).
  void run(const GpuMatrix& w, Activation& a, float* y, bool accumulate = false, const float* bias = nullptr,
           const RopeKvOut* rope = nullptr);
  // Whether run() takes gemv_quant for w and m activation rows.
  bool takes_gemv(const GpuMatrix& w, int64_t m) const;
  bool takes_rope(const GpuMatrix& w, int64_t m, const RopeKvOut& rope) const {
    return m == 1 && takes_gemv(w, m) && gemv_rope_supports(w, rope);
  }

  cudaStream_t stream() const { return stream_; }

  // Dequantized values the prefill scratch may hold (products of larger
  // matrices run in row blocks); the default is 64 Mi values.
  void set_scratch_limit(int64_t elems) { scratch_limit_ = elems > 0 ? elems : 1; }

  // Rows as one-token steps (ForwardBatch::rows_as_steps): outside the
  // exact mode every batch takes the kernels of one-token steps (the GEMVs,
  // a group of rows at a time; their per-row arithmetic does not depend on
  // the group's size), never matmul_mma or cuBLAS, so that each row's
  // outputs are its one-token step's bit for bit.
  void set_rows_as_steps(bool on) { rows_as_steps_ = on; }

  // Batches of lo..hi rows take matmul_mma (lo > hi: none); the default is
  // kMmaMinRows..kMmaMaxRows.
  void set_mma_rows(int64_t lo, int64_t hi) {
    mma_min_rows_ = lo;
    mma_max_rows_ = hi;
  }

 private:
  // The CPU's arithmetic (matmul_quant / matmul_float).
  void run_exact(const GpuMatrix& w, Activation& a, float* y, bool accumulate);
  // The dequantized product of the IQ/TQ types (exact_dequantized), in row
  // blocks of at most scratch_limit_ values.
  void run_dequantized(const GpuMatrix& w, Activation& a, float* y, bool accumulate);
  // gemv_quant over the activation rows in groups of kGemvMaxRows.
  void gemv_groups(const GpuMatrix& w, const QuantAct& q, int64_t m, float* y, bool accumulate);
  // y [m, n] (+)= x16 [m, k] · w16^T through cuBLAS (f16 operands, f32 sums);
  // rows of y ldy apart (0: n).
  void gemm_f16(const void* w16, int64_t n, int64_t k, const void* x16, int64_t m, float* y, bool accumulate,
                int64_t ldy = 0);

  cudaStream_t stream_;
  cublasHandle_t handle_ = nullptr;
  DeviceBuffer w16_;         // dequantized weights of the current row block [rows, k] f16
  DeviceBuffer mma_scratch_;  // split-k partial sums of matmul_mma
  DeviceBuffer w32_, x32_, y32_;  // run_dequantized: f32 rows, activations, the row block's outputs
  int64_t mma_min_rows_ = kMmaMinRows, mma_max_rows_ = kMmaMaxRows;
  bool pdl_ = false;
  bool rows_as_steps_ = false;
  int64_t scratch_limit_;
};

}  // namespace ferrite::cuda
