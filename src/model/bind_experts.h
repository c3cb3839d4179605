// Binding a layer's routed experts (the tensor names every llama.cpp MoE file
// uses): the router blk.N.ffn_gate_inp [n_embd, n_expert] and the stacked
// blk.N.ffn_gate_exps / ffn_up_exps [n_embd, n_ff, n_expert] and
// ffn_down_exps [n_ff, n_embd, n_expert], n_ff read from ffn_up_exps.
#pragma once

#include <cstdint>

#include "model/blocks.h"

namespace ferrite::model {

// Whether layer il of the file has routed experts (its ffn_gate_inp).
bool has_experts(const WeightBinder& b, int64_t il);

// Layer il's experts with a softmax router; norm_weights: the chosen
// experts' probabilities renormalised to sum to one. ModelError when the
// file has no expert_count or a tensor is missing or misshapen.
MoeWeights bind_experts(const WeightBinder& b, const HParams& hp, int64_t il, bool norm_weights);

}  // namespace ferrite::model
