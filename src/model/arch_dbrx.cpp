// dbrx (Databricks DBRX): a pre-norm decoder of LayerNorms with weights and
// no biases, one fused Q|K|V projection without bias whose output is clipped
// to [-c, c] (the file's attention.clamp_kqv, required as llama.cpp requires
// it; DBRX: 8) before NeoX RoPE over the whole head, GQA, and experts in
// every layer (softmax router, top-k probabilities renormalised; DBRX: 16,
// top 4) behind the norm the files call attn_output_norm:
//   per layer: x += attn(layer_norm(x)); x += moe(layer_norm'(x))
//   logits = output(layer_norm(x))
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/bind_experts.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

class Dbrx : public Architecture {
 public:
  Dbrx(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    const int64_t n_embd = hp.n_embd;
    hp.rope.neox = true;
    if (hp.rope.n_rot != hp.head_dim) {
      throw ModelError(file.path() + ": dbrx rotates whole heads (rope.dimension_count " +
                       std::to_string(hp.rope.n_rot) + ", head size " + std::to_string(hp.head_dim) + ")");
    }
    if (hp.n_expert == 0) throw ModelError(file.path() + ": dbrx needs expert_count");
    const std::string clamp_key = md.arch_key("attention.clamp_kqv");
    const std::optional<float> clamp = md.opt_float(clamp_key);
    if (!clamp) throw ModelError(file.path() + ": dbrx needs " + clamp_key);
    if (!(*clamp > 0.0f)) throw ModelError(file.path() + ": " + clamp_key + " must be positive");
    clamp_ = *clamp;
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = b.require("output.weight", {n_embd, hp.n_vocab});

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn = bind_attention(b, hp, il, QkvLayout::Fused);
      L.ffn_norm = bind_norm(b, name("attn_output_norm"), n_embd);
      L.moe = bind_experts(b, hp, il, /*norm_weights=*/true);
    }
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    const int rope = s.prepare_rope(rope_config(hp_.rope, nullptr));
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);

    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      backend::AttentionSpec a = attention_spec(hp_, il, L.attn, rope);
      a.clamp_qkv = clamp_;
      o.norm(NormKind::Layer, x, L.attn_norm, h, &L.attn.wqkv);
      o.attention(a, h, x, /*accumulate=*/true);
      o.norm(NormKind::Layer, x, L.ffn_norm, h, &L.moe.gate_exps);
      o.moe(L.moe, h, x, true);
    }
    output_head(s, hp_, NormKind::Layer, output_norm_, output_, Tensor{}, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, ffn_norm;  // ffn_norm: the file's attn_output_norm
    AttentionWeights attn;
    MoeWeights moe;
  };

  HParams hp_;
  float clamp_ = 0.0f;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_dbrx(const gguf::File& file, HParams& hp) {
  return std::make_unique<Dbrx>(file, hp);
}

}  // namespace ferrite::model
