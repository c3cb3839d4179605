// Building blocks shared by every architecture: embedding lookup, linear
// layers, self-attention over the KV cache (GQA/MQA, RoPE, optional per-head
// Q/K norms, fused QKV), gated feed-forward, mixture of experts, output rows.
// An architecture's forward pass (arch_*.cpp) is a short sequence of these.
#pragma once

#include <cstdint>

#include "cpu/rope.h"
#include "cpu/thread_pool.h"
#include "model/forward.h"
#include "model/hparams.h"
#include "model/weights.h"
#include "model/workspace.h"

namespace ferrite::model {

// Everything one forward pass uses.
struct Step {
  const HParams& hp;
  const ForwardBatch& batch;
  const KvView& kv;
  cpu::ThreadPool& pool;
  Workspace& ws;
  cpu::RopeConfig rope{};  // set by prepare_rope
  float attn_scale = 0.0f; // attention score scale; 0: 1/sqrt(head_dim)
};

// x [n_tokens, n_embd] = rows of the embedding table (any stored type).
// Throws InvalidArgument for a token id outside the table.
void embed_tokens(Step& s, const Tensor& tok_embd, float* x);

// y [n, w.rows] = x [n, w.cols] · W^T (+ bias when present).
void linear(Step& s, const Tensor& w, const Tensor& bias, const float* x, int64_t n, float* y);

// x[i] += y[i]
void add_inplace(float* x, const float* y, int64_t n);

// Rows of x [n_tokens, n_embd] listed in batch.out_rows, gathered: [n_out, n_embd].
float* gather_output_rows(Step& s, const float* x);

// The batch's RoPE angles (call once per step, before self_attention).
// freq_factors: [n_rot/2] from a rope_freqs tensor, or nullptr.
void prepare_rope(Step& s, const float* freq_factors);

struct AttentionWeights {
  Tensor wq, wk, wv;       // separate projections, or
  Tensor wqkv;             // one fused [n_embd, n_q + 2 n_kv]
  Tensor bq, bk, bv, bqkv; // biases (optional)
  Tensor q_norm, k_norm;   // per-head RMSNorm weights [head_dim] (optional)
  Tensor wo, bo;
};

// out [n, n_embd] = attention of the normed input h [n, n_embd] for layer
// `layer`, writing the batch's keys and values into the cache. `sliding`
// selects the sliding-window mask.
void self_attention(Step& s, int64_t layer, const AttentionWeights& w, const float* h, float* out,
                    bool sliding = false);

enum class Activation { Silu, Gelu };

struct FfnWeights {
  Tensor gate, up, down;       // gate may be null: out = down(act(up h))
  Tensor gate_b, up_b, down_b;
};

// out [n, n_embd] = down(act(gate h) * up h).
void feed_forward(Step& s, const FfnWeights& w, Activation act, const float* h, int64_t n, float* out);

struct MoeWeights {
  Tensor gate_inp;                      // router [n_embd, n_expert]
  Tensor gate_exps, up_exps, down_exps; // [n_embd, n_ff, n_expert], [n_ff, n_embd, n_expert]
  bool norm_weights = true;             // renormalise the selected experts' probabilities
  Tensor shexp_gate_inp;                // shared expert's sigmoid gate [n_embd] (optional)
  FfnWeights shexp;                     // shared expert (optional)
};

// out [n, n_embd]: softmax router, top-k experts per token, their SwiGLU
// outputs weighted by the (optionally renormalised) probabilities, plus the
// gated shared expert when present.
void mixture_of_experts(Step& s, const MoeWeights& w, const float* h, float* out);

}  // namespace ferrite::model
