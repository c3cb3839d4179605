// Blocks that the non-Llama families add to blocks.h: LayerNorm / RMSNorm
// with bound weights, learned absolute positions, GELU as llama.cpp's CPU
// backend computes it, phi3's fused gate/up feed-forward, scaling, and the
// output head (final norm, projection, optional soft-capping).
#pragma once

#include <cstdint>

#include "model/blocks.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace ferrite::model {

enum class NormKind { Rms, Layer };

// A norm's weight and (LayerNorm) optional bias.
struct Norm {
  Tensor w, b;
};

// y [n_rows, n] = norm(x) * w (+ b). Rms uses hp.norm_rms_eps, Layer hp.norm_eps.
void apply_norm(NormKind kind, const HParams& hp, const Norm& norm, const float* x, int64_t n_rows, int64_t n,
                float* y);

// Binds "<name>.weight" (required) and "<name>.bias" (optional) of length n.
Norm bind_norm(const WeightBinder& b, const std::string& name, int64_t n);

// token_embd.weight, setting hp.n_vocab from its rows.
Tensor bind_token_embd(const WeightBinder& b, HParams& hp);

// x [n_tokens, n_embd] += pos_embd rows of the batch's positions; throws
// InvalidArgument for a position beyond the table (the trained context).
// Uses ws.ffn_out as scratch.
void add_position_embeddings(Step& s, const Tensor& pos_embd, float* x);

// x[i] *= c
void scale_inplace(float* x, int64_t n, float c);

// out [n, n_embd] = down(gelu(up h + up_b)) + down_b, or with a gate:
// down(gelu(gate h) * up h). GELU as llama.cpp computes it (cpu/gelu_f16.h).
void feed_forward_gelu(Step& s, const FfnWeights& w, const float* h, int64_t n, float* out);

// phi3: up is fused [n_embd, 2 n_ff]; out = down(silu(first half) * second half).
void feed_forward_fused_swiglu(Step& s, const Tensor& up, const Tensor& down, const float* h, int64_t n,
                               float* out);

// The output head: gathers the batch's output rows of x, normalises them,
// projects to logits [n_out, n_vocab] (+ bias) and soft-caps them when
// hp.final_softcap > 0.
void output_head(Step& s, NormKind kind, const Norm& norm, const Tensor& output, const Tensor& output_b,
                 const float* x, float* logits);

}  // namespace ferrite::model
