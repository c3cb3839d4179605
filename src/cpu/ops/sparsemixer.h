// Phi-3.5-MoE's router at inference ("sparsemixer", backend::MoeGating::
// SparseMixer): k rounds over one token's router logits s[n_expert]. Round j
// takes the experts not chosen yet, their largest logit m (ties: the lower
// id) and its expert, masks every remaining expert e whose gap relative to
// the larger of |s_e| and m exceeds twice the router jitter,
//   (m - s_e) / max(|s_e|, m) > 2 jitter     (float arithmetic),
// and gives the chosen expert the softmax over the unmasked remaining ones
// at it: 1 / sum exp(s_e - m) (exp and sum in double). The weights are not
// renormalised. transformers' PhimoeForCausalLM runs two rounds.
//
// The CUDA twin is cuda::moe_route with MoeRouteOptions::sparsemixer
// (cuda/kernels/moe.cu); tests/cpu/sparsemixer_test.cpp checks this one
// against a double-precision reading of the definition.
#pragma once

#include <cstdint>

namespace ferrite::cpu {

// logits [n_expert] -> ids [k], weights [k]; 1 <= k <= n_expert. NaN logits
// rank below every number; a round with no finite logit left weighs 0.
void sparsemixer_route(const float* logits, int64_t n_expert, int64_t k, float jitter, int32_t* ids,
                       float* weights);

}  // namespace ferrite::cpu
