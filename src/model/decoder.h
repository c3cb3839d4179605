// The pre-norm decoder most families share (Llama, Mistral, Mixtral, Qwen2,
// Qwen2-MoE, Qwen3, Qwen3-MoE):
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
};

class Decoder : public Architecture {
 public:
  Decoder(const gguf::File& file, HParams& hp, const DecoderOptions& opt);

  void forward(Step& s, float* logits) const override;

  // Embeddings: the output rows after the output norm (pooling from
  // <arch>.pooling_type, none when absent, in hp.pooling).
  bool has_hidden_states() const override { return true; }
  void forward_hidden(Step& s, float* logits, float* hidden) const override;

  const backend::DecoderDesc* decoder_desc() const override { return &desc_; }

 private:
  struct Layer {
    Tensor attn_norm;
    AttentionWeights attn;
    Tensor ffn_norm;
    FfnWeights ffn;       // dense layers
    MoeWeights moe;       // expert layers (moe.gate_inp set)
  };

  HParams hp_;
  Tensor tok_embd_, output_norm_, output_, rope_freqs_;
  std::vector<Layer> layers_;
  backend::DecoderDesc desc_;  // pointers into the members above
};

}  // namespace ferrite::model
