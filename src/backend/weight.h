// A weight as the backends receive it: a tensor of the memory-mapped GGUF
// file (its type, shape and bytes) and, where the CPU repacked it at load,
// the repacked copy (model/packed_weights.h). Architectures bind weights by
// name and shape (model/weights.h); each backend reads them in its own way:
// the CPU where they are, the GPU from its device copy, made on first use.
#pragma once

#include <cstdint>

#include "gguf/file.h"

namespace ferrite::backend {

struct Weight {
  const gguf::TensorInfo* info = nullptr;  // null: an optional tensor that is absent
  const uint8_t* packed = nullptr;          // the CPU's repacked copy, or null

  explicit operator bool() const { return info != nullptr; }
  int64_t ne(int i) const { return info->ne[static_cast<size_t>(i)]; }
  // Elements per row and rows (a 3-D expert tensor [k, n, n_expert] has n * n_expert rows).
  int64_t cols() const { return info->ne[0]; }
  int64_t rows() const { return info->ne[1] * info->ne[2] * info->ne[3]; }
  TensorType type() const { return info->type; }
  // The data as f32 (norm weights and biases; the type was checked at bind).
  const float* f32() const { return reinterpret_cast<const float*>(info->data); }
};

// A normalisation's weight and (optional) bias.
struct Norm {
  Weight w, b;
};

// Self-attention of one layer: separate or fused Q/K/V projections, their
// optional biases, optional per-head RMSNorm of q and k, the output projection.
struct AttentionWeights {
  Weight wq, wk, wv;        // separate projections, or
  Weight wqkv;              // one fused [n_embd, n_q + 2 n_kv]
  Weight bq, bk, bv, bqkv;  // biases (optional)
  Weight q_norm, k_norm;    // RMSNorm weights (optional): [head_dim] per head, or
                            // [n_q] / [n_kv] over the whole projection (olmo2, olmoe)
  Weight wo, bo;
  Weight sinks;             // [n_head] (optional, gpt-oss): a learned logit per head that joins
                            // the softmax's denominator of every query row (no value of its own)
};

// A feed-forward block's matrices and optional biases (gate may be null).
struct FfnWeights {
  Weight gate, up, down;
  Weight gate_b, up_b, down_b;
};

// How a router turns its logits into probabilities.
// SoftmaxWeight (gpt-oss): the top-k chosen on the logits, their weights the
// softmax over the k chosen logits only. SparseMixer (phimoe): k rounds of
// the best remaining logit, weighed by the softmax over the remaining
// experts within a relative gap of 2 MoeWeights::jitter (cpu/ops/sparsemixer.h).
enum class MoeGating : uint8_t { Softmax, Sigmoid, SoftmaxWeight, SparseMixer };

// A mixture-of-experts feed-forward: router, stacked experts, optional
// shared expert with its optional sigmoid gate.
struct MoeWeights {
  Weight gate_inp;                       // router [n_embd, n_expert]
  Weight gate_exps, up_exps, down_exps;  // [n_embd, n_ff, n_expert], [n_ff, n_embd, n_expert]
  bool norm_weights = true;              // renormalise the selected experts' probabilities
  MoeGating gating = MoeGating::Softmax;
  float jitter = 0.0f;                   // SparseMixer: the router jitter that sets the mask's gap
  Weight probs_bias;                     // [n_expert] added to the probabilities for the choice only (optional)
  float weights_scale = 1.0f;            // factor of the (renormalised) weights
  Weight shexp_gate_inp;                 // shared expert's sigmoid gate [n_embd] (optional)
  FfnWeights shexp;                      // shared expert (optional)
  // gpt-oss: biases (optional) of the router [n_expert] (added to its logits)
  // and of every expert's gate and up [n_ff, n_expert] and down [n_embd, n_expert].
  Weight gate_inp_b, gate_exps_b, up_exps_b, down_exps_b;
  // > 0: the experts' activation is gpt-oss's clamped SwiGLU (cpu/ops/activations.h
  // swiglu_oai) with this alpha and limit instead of silu(gate) * up.
  float oai_alpha = 0.0f, oai_limit = 0.0f;
  // llama4: each chosen expert's weight multiplies its input instead of its
  // output: sum_j FFN_e(w_j h) (the weights then are not applied again).
  bool weight_input = false;
};

// Multi-head latent attention (deepseek2): queries from the input (one
// projection, or a low-rank pair with an RMSNorm between), keys and values
// from a compressed latent c (kv_lora_rank, RMS-normed) and one rotary key
// part k_pe (n_rot) shared by every head. Per head h, the full form is
//   k_h = [W_UK_h c, k_pe], v_h = W_UV_h c, q_h = [q_nope_h, q_pe_h];
// the absorbed form used here folds W_UK_h into the query and W_UV_h into
// the output, so that attention runs over the cached latent itself:
//   score = (W_UK_h^T q_nope_h) . c + q_pe_h . k_pe,  o_h = W_UV_h (sum p c).
// The derived per-head matrices are made at load (model/arch_deepseek2.cpp).
struct MlaWeights {
  Weight wq;                      // [n_embd, n_head (nope + rope)] without q_lora_rank, or:
  Weight wq_a, q_a_norm, wq_b;    // [n_embd, q_lora], [q_lora], [q_lora, n_head (nope + rope)]
  Weight wkv_a;                   // [n_embd, kv_lora + rope]: c | k_pe
  Weight kv_a_norm;               // [kv_lora]
  Weight wk_b;                    // W_UK_h^T per head: [nope, kv_lora, n_head] (F32 or F16)
  Weight wv_b;                    // W_UV_h per head: [kv_lora, v_dim, n_head] (F32 or F16)
  Weight wo;                      // [n_head v_dim, n_embd]
};

// A Mamba-2 mixer (backend::SsmSpec, ops.h): the input projection to
// z | xBC | dt, the causal depthwise convolution over xBC with its bias, the
// per-head dt bias, decay A (already -exp(A_log)) and skip D, the grouped
// RMSNorm of the gated output, and the output projection.
struct SsmWeights {
  Weight in;        // [n_embd, 2 d_inner + 2 n_group d_state + n_head]
  Weight conv;      // [d_conv, conv_ch] (F32), conv_ch = d_inner + 2 n_group d_state
  Weight conv_b;    // [conv_ch]
  Weight dt_b;      // [n_head]
  Weight a;         // [1, n_head]
  Weight d;         // [1, n_head]
  Weight norm;      // [d_inner / n_group, n_group]
  Weight out;       // [d_inner, n_embd]
};

// An RWKV layer's time mix and channel mix (llama.cpp's names in
// model/arch_rwkv.cpp). The f32 vectors are [n_embd] unless said; a slice of
// a stacked tensor is a Weight of its own (the model keeps its TensorInfo).
struct RwkvWeights {
  // The token-shift mixes: x_j = h + (prev - h) * (lerp[j] (+ the data-dependent term, rwkv6)),
  // j over rwkv6's w, k, v, r, g or rwkv7's r, w, k, v, a, g (g absent without gate).
  Weight lerp[6];
  // rwkv6: lerp_x, the data-dependent mix's LoRA tanh(x w1) [n_embd, 5 extra] then w2[j] [extra, n_embd];
  // the decay  decay + tanh(xw decay_w1) decay_w2, time_mix_first (u) [head_size, n_head].
  Weight lerp_x, w1, w2[5];
  Weight decay, decay_w1, decay_w2, first;
  // rwkv7: decay LoRA w0 + tanh(x w1) w2 (in w1/w2 above are rwkv6's; here d1/d2), in-context
  // learning rate a0 + (x a1) a2, value residual v0 + (x v1) v2 (layers > 0), gate sigmoid(x g1) g2
  // (optional), k_k, k_a, r_k.
  Weight w0, d1, d2, a0, a1, a2, v0, v1, v2, g1, g2, k_k, k_a, r_k;
  Weight key, value, receptance, gate, output;  // gate: rwkv6's (silu; rwkv6qwen2's sigmoid)
  Weight key_b, value_b, receptance_b;          // rwkv6qwen2's optional biases
  Weight ln, ln_b;                              // the group norm's affine [n_embd]
  // The channel mix: k = relu(W_key xk)^2; rwkv6: sigmoid(W_r xr) * (W_value k); rwkv7: W_value k.
  Weight cm_lerp_k, cm_lerp_r, cm_key, cm_value, cm_receptance;
};

}  // namespace ferrite::backend
