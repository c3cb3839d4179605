// starcoder2: pre-LayerNorm decoder with biases everywhere (norms, Q/K/V,
// output projection, MLP), NeoX RoPE, GQA, a GELU MLP, tied output when the
// file has no output.weight.
#include <vector>

#include "model/arch_factories.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

class StarCoder2 : public Architecture {
 public:
  StarCoder2(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const int64_t n_embd = hp.n_embd;
    hp.rope.neox = true;
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = bind_output_or_tied(b, hp, tok_embd_);

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn = bind_attention(b, hp, il, QkvLayout::Separate);
      L.ffn_norm = bind_norm(b, name("ffn_norm"), n_embd);
      L.ffn = bind_ffn(b, hp, il, FfnGate::None);
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
      o.norm(NormKind::Layer, x, L.attn_norm, h, qkv_input(L.attn));
      o.attention(attention_spec(hp_, il, L.attn, rope), h, x, /*accumulate=*/true);
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
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_starcoder2(const gguf::File& file, HParams& hp) {
  return std::make_unique<StarCoder2>(file, hp);
}

}  // namespace ferrite::model
