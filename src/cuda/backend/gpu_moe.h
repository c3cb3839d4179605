// The mixture-of-experts feed-forward of the GPU decoder's expert layers
// (model/blocks.cpp mixture_of_experts on the device):
//   logits = h · router^T [n, n_expert]; ids, weights = top-k of softmax (moe_route)
//   x += sum_j weights[j] * down_e(silu(gate_e h) * up_e h), e = ids[j]
//        (+ sigmoid(h · g) * shared_ffn(h) where the layer has a shared expert)
// Expert tensors [k, n, n_expert] are uploaded whole as matrices of n *
// n_expert rows; an expert is a row slice. Gate and up experts of one type
// are stacked expert by expert (gate_e rows, then up_e rows), so that one
// launch makes both for every chosen expert.
// Two ways through the experts:
// - on the device (one token, outside the exact mode, every expert type
//   taken by an expert-indirect GEMV, moe_ops.h): the GEMVs read the ids the
//   router wrote, nothing returns to the host, so the decode step stays
//   capturable in a CUDA graph;
// - grouped (prefill, the exact mode, other types): the ids are copied to
//   the host (one synchronisation per layer), the token rows are gathered
//   expert by expert and each expert's rows go through LinearRunner (every
//   product path it has: cuBLAS, int8 mma, GEMV, the CPU's order).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/device_buffer.h"
#include "cuda/gpu_matrix.h"
#include "cuda/linear.h"
#include "model/model.h"

namespace ferrite::cuda {

class GpuMoe {
 public:
  // Uploads the expert tensors of the model's layers [first_layer, n_layer)
  // that have a router (ffn_gate_inp). Throws InvalidArgument for shapes or
  // counts the kernels do not take, ModelError for missing tensors.
  GpuMoe(const model::Model& m, int64_t first_layer);
  GpuMoe(const GpuMoe&) = delete;
  GpuMoe& operator=(const GpuMoe&) = delete;

  // True when model layer il is an expert layer.
  bool has(int64_t il) const;
  // The weight type of the first product that reads the normed input (the
  // experts' gate): for the norm's fused conversion.
  TensorType input_type(int64_t il) const;
  // True when a pass of n tokens runs entirely on the device (no host
  // round trip: it may be captured into a CUDA graph).
  bool device_only(int64_t n) const;

  // x [n, n_embd] += the expert layer il of h (act: the normed input [n, n_embd]).
  void run(int64_t il, Activation& act, float* x, LinearRunner& lin);

  uint64_t weight_bytes() const { return weight_bytes_; }

 private:
  struct Layer {
    GpuMatrix router;                       // [n_expert, n_embd]
    GpuMatrix gate_up;                      // [n_expert * 2 n_ff, n_embd] (gate_e | up_e), or null and:
    GpuMatrix gate, up;                     // [n_expert * n_ff, n_embd] each
    GpuMatrix down;                         // [n_expert * n_embd, n_ff]
    GpuMatrix sh_gate, sh_up;               // shared expert [n_ff_sh, n_embd] each
    GpuMatrix sh_down, sh_inp;              // [n_embd, n_ff_sh], sigmoid gate [1, n_embd]
    int64_t n_ff = 0, n_ff_sh = 0;
    bool renorm = true;
    bool on_device = false;                 // every expert matrix has an indirect GEMV
    bool present = false;
  };
  GpuMatrix upload(const std::string& name, bool required, int64_t rows_per_item = 0);
  // gate|up stacked per expert when both tensors have one type (else null).
  GpuMatrix upload_gate_up(const std::string& gate, const std::string& up);
  const Layer& layer(int64_t il) const;
  // Expert e's gate and up matrices [n_ff, n_embd].
  static GpuMatrix expert_gate(const Layer& L, int64_t e);
  static GpuMatrix expert_up(const Layer& L, int64_t e);
  // The expert products, ids on the device (one token).
  void experts_on_device(const Layer& L, Activation& act, int64_t n, LinearRunner& lin);
  // The expert products grouped by expert on the host's copy of the ids.
  void experts_grouped(const Layer& L, Activation& act, int64_t n, LinearRunner& lin);
  void shared_expert(const Layer& L, Activation& act, int64_t n, LinearRunner& lin);
  void reserve(int64_t n, const Layer& L);

  const model::Model& model_;
  model::HParams hp_;
  int64_t first_layer_ = 0;
  std::vector<Layer> layers_;       // [n_layer - first_layer]
  std::vector<DeviceBuffer> buffers_;
  uint64_t weight_bytes_ = 0;

  // Scratch (grown on demand).
  DeviceBuffer logits_, ids_, weights_, rows_, in_, gate_, up_, ys_, sh_, sh_gate_;
  PinnedBuffer host_ids_, host_rows_;
  Activation act_in_, act_mid_, act_sh_;
  bool use_rows_ = false;  // the grouped path's combine reads rows_
};

}  // namespace ferrite::cuda
