// gpt2: learned absolute positions added to the token embeddings, pre-
// LayerNorm blocks (with biases), a fused QKV projection with bias, no RoPE,
// and a GELU MLP with biases.
//   x = tok_embd[t] + pos_embd[p]
//   per layer: x += attn(ln(x)); x += mlp(ln(x))
//   logits = output(ln(x))
#include <vector>

#include "model/arch_factories.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

class Gpt2 : public Architecture {
 public:
  Gpt2(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const int64_t n_embd = hp.n_embd;
    // Learned positions: keys carry no rotation, so a context shift moves
    // the cells' positions only (rope.dimension_count defaults to the head).
    hp.rope.n_rot = 0;
    tok_embd_ = bind_token_embd(b, hp);
    const gguf::TensorInfo& pos = file.tensor("position_embd.weight");
    pos_embd_ = b.require("position_embd.weight", {n_embd, pos.ne[1]});
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = bind_output_or_tied(b, hp, tok_embd_);

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn = bind_attention(b, hp, il, QkvLayout::Fused);
      L.ffn_norm = bind_norm(b, name("ffn_norm"), n_embd);
      L.ffn = bind_ffn(b, hp, il, FfnGate::None);
    }
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    add_position_embeddings(s, pos_embd_, x);

    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      o.norm(NormKind::Layer, x, L.attn_norm, h, qkv_input(L.attn));
      o.attention(attention_spec(hp_, il, L.attn, backend::kNoRope), h, x, /*accumulate=*/true);
      o.norm(NormKind::Layer, x, L.ffn_norm, h, ffn_input(L.ffn));
      o.feed_forward({&L.ffn, FfnKind::GeluF16}, h, x, true);
    }
    output_head(s, hp_, NormKind::Layer, output_norm_, output_, Tensor{}, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, ffn_norm;
    AttentionWeights attn;
    FfnWeights ffn;
  };

  HParams hp_;
  Tensor tok_embd_, pos_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_gpt2(const gguf::File& file, HParams& hp) {
  return std::make_unique<Gpt2>(file, hp);
}

}  // namespace ferrite::model
