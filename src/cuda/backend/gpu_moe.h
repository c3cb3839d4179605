// The mixture-of-experts feed-forward of the CUDA backend (backend/ops.h
// moe; the CPU's is cpu/backend/cpu_ffn.cpp):
//   logits = h · router^T [n, n_expert]; ids, weights = top-k of softmax or
//   sigmoid (+ selection bias), renormalised, scaled (moe_route)
//   x += sum_j weights[j] * down_e(silu(gate_e h) * up_e h), e = ids[j]
//        (gpt-oss: biases on the router and the experts' products, the
//        softmax over the chosen logits, the clamped SwiGLU)
//        (+ sigmoid(h · g) * shared_ffn(h) where the layer has a shared expert)
// Expert tensors [k, n, n_expert] are uploaded whole (weights.h, on first
// use) as matrices of n * n_expert rows; an expert is a row slice. Gate and up experts of one type
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
#include <unordered_map>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/kernels/device_buffer.h"
#include "cuda/kernels/gpu_matrix.h"
#include "cuda/kernels/moe_ops.h"
#include "backend/ops.h"
#include "cuda/backend/linear.h"
#include "cuda/backend/weights.h"

namespace ferrite::cuda {

class GpuMoe {
 public:
  GpuMoe(const backend::ModelDims& dims, WeightStore& weights);
  GpuMoe(const GpuMoe&) = delete;
  GpuMoe& operator=(const GpuMoe&) = delete;

  // True when a pass of n tokens through the layer of w runs entirely on
  // the device (no host round trip: it may be captured into a CUDA graph).
  bool device_only(const backend::MoeWeights& w, int64_t n);

  // x [n, n_embd] += the experts of w for the normed input (act [n, n_embd]).
  // Throws InvalidArgument for counts or shapes the kernels do not take.
  void run(const backend::MoeWeights& w, Activation& act, float* x, LinearRunner& lin);

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
    MoeRouteOptions route;                  // gating, selection bias (device), weights' scale
    // gpt-oss (device, or null): the router's bias [n_expert], the experts'
    // gate and up biases [n_expert][n_ff] and down biases [n_expert][n_embd];
    // oai_alpha > 0: the clamped SwiGLU (cpu::swiglu_oai). Such layers take
    // the grouped path.
    const float *router_b = nullptr, *gate_b = nullptr, *up_b = nullptr, *down_b = nullptr;
    float oai_alpha = 0.0f, oai_limit = 0.0f;
    bool on_device = false;                 // every expert matrix has an indirect GEMV
    bool weight_input = false;              // llama4: the weights scale the experts' inputs (grouped path)
  };
  // The device form of w's layer (uploaded and checked at the first call).
  const Layer& layer(const backend::MoeWeights& w);
  // Expert e's gate and up matrices [n_ff, n_embd].
  static GpuMatrix expert_gate(const Layer& L, int64_t e);
  static GpuMatrix expert_up(const Layer& L, int64_t e);
  // The expert products, ids on the device (one token).
  void experts_on_device(const Layer& L, Activation& act, int64_t n, LinearRunner& lin);
  // The expert products grouped by expert on the host's copy of the ids.
  void experts_grouped(const Layer& L, Activation& act, int64_t n, LinearRunner& lin);
  void shared_expert(const Layer& L, Activation& act, int64_t n, LinearRunner& lin);
  void reserve(int64_t n, const Layer& L);

  backend::ModelDims dims_;
  WeightStore& weights_;
  std::unordered_map<const gguf::TensorInfo*, Layer> layers_;  // by the router tensor

  // Scratch (grown on demand).
  DeviceBuffer logits_, ids_, weights_buf_, rows_, in_, gate_, up_, ys_, sh_, sh_gate_;
  PinnedBuffer host_ids_, host_rows_;
  Activation act_in_, act_mid_, act_sh_;
  bool use_rows_ = false;  // the grouped path's combine reads rows_
};

}  // namespace ferrite::cuda
