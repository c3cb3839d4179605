// Linear layers on the GPU: y [m, n] (+)= x [m, k] · W^T (+ bias), choosing
// the product by weight type: quantized types through 8-bit activations and
// matmul_quant (the CPU's arithmetic), F16 and F32 through matmul_float
// (f16 operands rounded as the CPU rounds them, f32 sums), or cuBLAS for
// prefill when FERRITE_CUDA_CUBLAS=1.
// An Activation caches its converted forms (8-bit blocks, f16) until its
// values change, so Q, K and V (or gate and up) convert their input once.
#pragma once

#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cuda/device_buffer.h"
#include "cuda/gpu_matrix.h"
#include "cuda/ops.h"

namespace ferrite::cuda {

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
  void changed() { have_q_[0] = have_q_[1] = have_f16_ = false; }

  float* x() const { return x_; }
  int64_t m() const { return m_; }
  int64_t k() const { return k_; }

  // The activations quantized for weights of type t (converted once).
  QuantAct quantized(ActFormat f, cudaStream_t s);
  // The activations as f16 (converted once).
  const uint16_t* f16(cudaStream_t s);

 private:
  float* x_ = nullptr;
  int64_t m_ = 0, k_ = 0;
  bool have_q_[2] = {false, false};
  bool have_f16_ = false;
  DeviceBuffer qs_[2], d_[2], sums_[2], f16_;
};

class LinearRunner {
 public:
  explicit LinearRunner(cudaStream_t stream);
  ~LinearRunner();
  LinearRunner(const LinearRunner&) = delete;
  LinearRunner& operator=(const LinearRunner&) = delete;

  // y [a.m(), w.n] = a · W^T (+ bias [w.n] when not null); accumulate: y += instead.
  void run(const GpuMatrix& w, Activation& a, float* y, bool accumulate = false, const float* bias = nullptr);

  cudaStream_t stream() const { return stream_; }

 private:
  cudaStream_t stream_;
  cublasHandle_t handle_ = nullptr;
  bool use_cublas_ = false;  // FERRITE_CUDA_CUBLAS=1: cuBLAS for float prefill (see bench/cuda/NOTES.md)
};

}  // namespace ferrite::cuda
