// The CUDA backend's copies of the model's weights (backend/weight.h), made
// on first use from the mapped file into the GPU layouts (kernels/gpu_matrix.h):
// a weight as it is, or several of one type and row length stacked into one
// matrix (Q|K|V, gate|up: one product launch for a decode step), or the
// experts' gate and up tensors interleaved expert by expert. The model binds
// its weights once (model/weights.h, with their shape checks); this store
// only follows the Weight handles the operations pass.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/weight.h"
#include "cuda/kernels/device_buffer.h"
#include "cuda/kernels/gpu_matrix.h"

namespace ferrite::cuda {

class WeightStore {
 public:
  // w on the device: a matrix of w.rows() rows of w.cols() (a 1-D weight is one row).
  // Throws InvalidArgument for a type the GPU does not take.
  const GpuMatrix& matrix(const backend::Weight& w);
  // An f32 vector weight (norm weight, bias) on the device, or null for an absent weight.
  const float* vec(const backend::Weight& w) {
    return w ? reinterpret_cast<const float*>(matrix(w).data) : nullptr;
  }

  // The weights `parts` (same row length) as one matrix with their rows
  // stacked in order, and each part as a view of it; where they differ in
  // type or row length, `all` is null and each part its own matrix.
  struct Stack {
    GpuMatrix all;
    std::vector<GpuMatrix> parts;
  };
  const Stack& stacked(const std::vector<const backend::Weight*>& parts);
  // Whether stacked(parts) makes one matrix (present 2-D weights of one type and row length).
  static bool stackable(const std::vector<const backend::Weight*>& parts);

  // Expert tensors gate and up [k, n_ff, n_expert] of one type as one
  // matrix [n_expert * 2 n_ff, k]: expert e's gate rows, then its up rows;
  // null where the two differ in type or shape.
  const GpuMatrix& experts_gate_up(const backend::Weight& gate, const backend::Weight& up);

  // Bytes uploaded so far.
  uint64_t bytes() const { return bytes_; }

 private:
  GpuMatrix upload(TensorType type, int64_t rows, int64_t cols, const void* host, const std::string& name);

  std::unordered_map<const gguf::TensorInfo*, GpuMatrix> single_;
  std::map<std::vector<const gguf::TensorInfo*>, Stack> stacks_;
  std::unordered_map<const gguf::TensorInfo*, GpuMatrix> gate_up_;  // by the gate tensor
  std::deque<DeviceBuffer> buffers_;
  uint64_t bytes_ = 0;
};

}  // namespace ferrite::cuda
