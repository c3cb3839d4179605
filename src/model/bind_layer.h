// Binding the per-layer tensors most families share, under llama.cpp's names
// (blk.N.attn_qkv / attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up,
// ffn_down, each with its optional bias) and the output projection. A family
// binds what is its own (norms, experts, extra tensors) beside these.
#pragma once

#include <cstdint>

#include "model/blocks.h"

namespace ferrite::model {

// How a family's files store the Q/K/V projections.
enum class QkvLayout {
  Fused,     // attn_qkv [n_embd, n_q + 2 n_kv] (+ attn_qkv.bias)
  Separate,  // attn_q, attn_k, attn_v (+ their biases)
  Either,    // the fused tensor when the file has it, else the separate ones
};

// Layer il's attention projections and output projection, each bias bound
// when the file has it. ModelError when a required tensor is missing or
// misshapen. Q/K norms and other extras are the family's.
AttentionWeights bind_attention(const WeightBinder& b, const HParams& hp, int64_t il, QkvLayout layout);

// Whether the MLP has a gate (SwiGLU/GeGLU: ffn_gate, ffn_up, ffn_down), has
// none (ffn_up, ffn_down), or has one when the file holds ffn_gate.
enum class FfnGate { None, Required, Optional };

// Layer il's MLP: n_ff read from ffn_up's rows, each bias bound when the
// file has it.
FfnWeights bind_ffn(const WeightBinder& b, const HParams& hp, int64_t il, FfnGate gate);

// output.weight [n_embd, n_vocab], or the token table when the file ties
// them (has no output.weight).
Tensor bind_output_or_tied(const WeightBinder& b, const HParams& hp, const Tensor& tok_embd);

}  // namespace ferrite::model
