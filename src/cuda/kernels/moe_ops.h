// Host entry points of the mixture-of-experts kernels (moe.cu, and the
// expert-indirect quantized GEMV in gemv_quant.cu), all asynchronous on
// `s`. An expert matrix is the 3-D GGUF tensor [k, n, n_expert] uploaded as
// one matrix of n * n_expert rows (rows are stored expert after expert in
// every type): expert e is rows [e * n, (e + 1) * n).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/kernels/gpu_matrix.h"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {

// Experts the routing kernel takes (a warp holds a token's router row).
constexpr int64_t kMoeMaxExperts = 256;

// The router of model/blocks.cpp mixture_of_experts, per token: probs =
// softmax(logits [n, n_expert]) (the CPU's exp and its double sum), the
// k_used largest (ties: the lower expert id first, as the CPU's stable
// sort; NaN ranks below every number) into ids [n, k_used] with their
// probabilities in weights [n, k_used], divided by their sum (in selection
// order) when `renorm`. Every id is in [0, n_expert) whatever the logits.
// n_expert <= kMoeMaxExperts, 1 <= k_used <= n_expert.
// opt (DeepSeek-V3's router, the CPU's cpu_ffn.cpp moe): probabilities by
// sigmoid instead of softmax; the choice ranks probability + bias[e]
// (device [n_expert], or null) while the weights stay the probabilities;
// the weights times scale after the renormalisation.
// softmax_weight (gpt-oss, backend::MoeGating::SoftmaxWeight): no
// probabilities; the k largest logits are chosen and their weights are the
// softmax over those k (the CPU's softmax_inplace); renorm is then moot.
// sparsemixer (phimoe, backend::MoeGating::SparseMixer; CPU twin
// cpu::sparsemixer_route, cpu/ops/sparsemixer.h): k rounds of the largest
// logit left, weighed by the softmax at it over the experts left within
// the relative gap 2 jitter; never renormalised (renorm is moot).
struct MoeRouteOptions {
  bool sigmoid = false;
  bool softmax_weight = false;
  bool sparsemixer = false;
  float jitter = 0.0f;  // sparsemixer's router jitter
  const float* bias = nullptr;
  float scale = 1.0f;
};
void moe_route(const float* logits, int64_t n, int64_t n_expert, int64_t k_used, bool renorm, int32_t* ids,
               float* weights, cudaStream_t s, const MoeRouteOptions& opt = {});

// x [n, n_embd] += sum over the token's slots j, in ascending expert id, of
// weights[t, j] * ys[row(t, j)] (ys [?, n_embd]; row(t, j) = rows[t * k_used
// + j], or t * k_used + j when rows is null), plus sigmoid(sh_gate[t]) *
// sh[t] (sh [n, n_embd] when not null; sh_gate [n] when not null, else the
// factor is 1). The experts' sum is formed first, as the CPU's `out` is.
struct MoeCombine {
  const float* ys = nullptr;
  const int32_t* rows = nullptr;
  const int32_t* ids = nullptr;     // [n, k_used]
  const float* weights = nullptr;   // [n, k_used]
  const float* sh = nullptr;
  const float* sh_gate = nullptr;
  int64_t n = 0, k_used = 0, n_embd = 0;
};
void moe_combine(const MoeCombine& c, float* x, cudaStream_t s);

// Expert products of one token per slot, the expert chosen on the device:
// y [n_slots, rows] where y[j] = W_e · x_j^T, W_e = rows of expert e =
// ids[j] of the stacked w, x_j = activation row j * act_step (act_step 0:
// one row for every slot, 1: a row per slot). The ids are read on the
// device, so a captured decode graph replays with each step's experts.
// split > 0 (dividing rows): each slot's outputs are cut into parts of split
// rows and part p of slot j goes to y + (p * n_slots + j) * split (experts
// with gate|up stacked: every slot's gate, then every slot's up).
//
// F32 and F16 weights (f32 activations [*, w.k]; F16 rounds them to f16 as
// the CPU's product does), sums in any order:
void moe_gemv_float(const GpuMatrix& w, const int32_t* ids, int64_t n_slots, int64_t rows, const float* x,
                    int64_t act_step, float* y, cudaStream_t s, int64_t split = 0);
// Quantized weights (the types and shapes gemv_quant_supports(w, 1) takes)
// on activations quantized in act_format_for(w.type); pdl as for gemv_quant.
bool gemv_quant_experts_supports(const GpuMatrix& w);
void gemv_quant_experts(const GpuMatrix& w, const int32_t* ids, int64_t n_slots, int64_t rows, const QuantAct& a,
                        int64_t act_step, float* y, bool pdl, cudaStream_t s, int64_t split = 0);

}  // namespace ferrite::cuda
