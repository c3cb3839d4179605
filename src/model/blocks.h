// What the families share around the backend operations (backend/ops.h):
// binding the common weights (norms, the token table), the attention
// settings from the hyperparameters (the RoPE's: layer_rope.h), learned
// position embeddings and the output head. An architecture's forward pass (arch_*.cpp) is a
// short sequence of operations and these.
#pragma once

#include <cstdint>
#include <string>

#include "backend/ops.h"
#include "model/hparams.h"
#include "model/layer_rope.h"
#include "model/step.h"
#include "model/weights.h"

namespace ferrite::model {

using backend::Act;
using backend::AttentionWeights;
using backend::Buf;
using backend::FfnKind;
using backend::FfnWeights;
using backend::Ids;
using backend::MoeWeights;
using backend::Norm;
using backend::NormKind;

// Binds "<name>.weight" (required) and "<name>.bias" (optional) of length n.
Norm bind_norm(const WeightBinder& b, const std::string& name, int64_t n);

// An optional q or k norm weight: [head_dim] (per head), or [whole] (over
// the whole projection, olmo2/olmoe) when whole_ok. Absent: a null Tensor.
Tensor bind_qk_norm(const WeightBinder& b, const std::string& name, int64_t head_dim, int64_t whole, bool whole_ok);

// token_embd.weight, setting hp.n_vocab from its rows.
Tensor bind_token_embd(const WeightBinder& b, HParams& hp);

// Layer il's attention with the model's soft-cap.
backend::AttentionSpec attention_spec(const HParams& hp, int64_t il, const AttentionWeights& w, int rope,
                                      bool sliding = false);

// The product that reads an attention block's normed input first (for the
// norm's `feeds`): the fused or the Q projection.
inline const Tensor* qkv_input(const AttentionWeights& w) { return w.wqkv ? &w.wqkv : &w.wq; }
// The same for a feed-forward block: gate, or up without one.
inline const Tensor* ffn_input(const FfnWeights& w) { return w.gate ? &w.gate : &w.up; }

// x [n_tokens, n_embd] += pos_embd rows of the batch's positions; throws
// InvalidArgument for a position beyond the table (the trained context).
void add_position_embeddings(Step& s, const Tensor& pos_embd, Act x);

// The output head: gathers the batch's output rows of x, normalises them,
// projects to logits [n_out, n_vocab] (+ bias; host memory) and soft-caps them
// when hp.final_softcap > 0. hidden (host, may be null): the normalised rows
// [n_out, n_embd]; logits may be null when hidden is not. logit_scale: a
// factor on the logits (command-r's, granite's 1 / logits_scaling).
void output_head(Step& s, const HParams& hp, NormKind kind, const Norm& norm, const Tensor& output,
                 const Tensor& output_b, Act x, float* logits, float* hidden = nullptr, float logit_scale = 1.0f);

}  // namespace ferrite::model
