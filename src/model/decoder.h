// The pre-norm decoder most families share (Llama, Mistral, Mixtral, Qwen2,
// Qwen2-MoE, Qwen3, Qwen3-MoE, EXAONE, InternLM2, OLMoE, XVERSE, Baichuan 7B,
// Orion, StableLM, OLMo, Nemotron, SmolLM3, ERNIE 4.5, ERNIE 4.5 MoE,
// Hunyuan-MoE):
//   x = embed(tokens)
//   per layer: x += attn(rms_norm(x)); x += ffn_or_moe(rms_norm(x))
//   logits = output(rms_norm(x))
// Families differ by options (RoPE pairing, Q/K norms, MoE weight
// normalisation) and by which optional tensors exist (biases, shared expert).
#pragma once

#include <memory>
#include <vector>

#include "model/architecture.h"
#include "model/blocks.h"
#include "model/step.h"
#include "model/weights.h"

namespace ferrite::model {

struct DecoderOptions {
  bool neox_rope = false;       // NeoX pairing (Qwen) instead of adjacent pairs (Llama)
  bool moe_norm_weights = true; // Mixtral/Qwen3-MoE renormalise top-k probabilities; Qwen2-MoE does not
  bool qk_norm_whole = false;   // attn_q_norm/attn_k_norm may span the whole projection [n_q]/[n_kv]
                                // (OLMoE) instead of one head [head_dim] (Qwen3)
  bool layer_norm = false;      // LayerNorm with biases (attn_norm, ffn_norm, output_norm .bias) instead
                                // of RMSNorm (Orion)
  bool norm_weights = true;     // false: the norms have no weights (OLMo's non-parametric LayerNorm)
  bool ffn_relu_sqr = false;    // feed-forward down(relu(up h + b)^2) + b without gate (Nemotron)
  bool qk_norm_after_rope = false;  // q/k norms after RoPE (Hunyuan-MoE, as transformers' HunYuanMoEV1)
  int64_t no_rope_layer_step = 0;  // > 0: layers il with (il + 1) % step == 0 attend without RoPE (SmolLM3;
                                   // model/layer_rope.cpp says the same for a context shift)
};

class Decoder : public Architecture {
 public:
  Decoder(const gguf::File& file, HParams& hp, const DecoderOptions& opt);

  void forward(Step& s, float* logits) const override;

  // Embeddings: the output rows after the output norm (pooling from
  // <arch>.pooling_type, none when absent, in hp.pooling).
  bool has_hidden_states() const override { return true; }
  void forward_hidden(Step& s, float* logits, float* hidden) const override;

  // (RMSNorm and SwiGLU decoders with RoPE on every layer, q/k norms before
  // it, only: DecoderDesc has no norm or feed-forward kind, one RoPE for all
  // layers and no norm order.)
  const backend::DecoderDesc* decoder_desc() const override {
    return norm_ == NormKind::Rms && ffn_ == FfnKind::SwiGlu && no_rope_step_ == 0 && !qk_norm_after_rope_ ? &desc_
                                                                                                          : nullptr;
  }

 private:
  struct Layer {
    Tensor attn_norm, attn_norm_b;
    AttentionWeights attn;
    Tensor ffn_norm, ffn_norm_b;
    FfnWeights ffn;       // dense layers
    MoeWeights moe;       // expert layers (moe.gate_inp set)
  };

  HParams hp_;
  NormKind norm_ = NormKind::Rms;
  FfnKind ffn_ = FfnKind::SwiGlu;
  int64_t no_rope_step_ = 0;
  bool qk_norm_after_rope_ = false;
  Tensor tok_embd_, output_norm_, output_norm_b_, output_, rope_freqs_;
  std::vector<Layer> layers_;
  backend::DecoderDesc desc_;  // pointers into the members above
};

}  // namespace ferrite::model
