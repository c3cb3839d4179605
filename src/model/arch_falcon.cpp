// falcon: attention and MLP in parallel from one LayerNorm of the input
// (Falcon-40B-style files add attn_norm_2, which then feeds the attention),
// a fused QKV projection without bias (multi-query attention), NeoX RoPE,
// a GELU MLP without biases:
//   x += attn(ln_a(x)) + mlp(ln(x))
#include <vector>

#include "model/arch_factories.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

class Falcon : public Architecture {
 public:
  Falcon(const gguf::File& file, HParams& hp) {
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
      if (file.find_tensor(name("attn_norm_2.weight")) != nullptr) {
        L.attn_norm_2 = bind_norm(b, name("attn_norm_2"), n_embd);
      }
      L.attn = bind_attention(b, hp, il, QkvLayout::Fused);
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
      const Act y = o.buffer(Buf::Y, n, n_embd);
      const Act f = o.buffer(Buf::F, n, n_embd);
      const backend::AttentionSpec a = attention_spec(hp_, il, L.attn, rope);
      o.norm(NormKind::Layer, x, L.attn_norm, h, L.attn_norm_2.w ? ffn_input(L.ffn) : qkv_input(L.attn));
      if (L.attn_norm_2.w) {
        const Act h2 = o.buffer(Buf::H2, n, n_embd);
        o.norm(NormKind::Layer, x, L.attn_norm_2, h2, qkv_input(L.attn));
        o.attention(a, h2, y);
      } else {
        o.attention(a, h, y);
      }
      o.feed_forward({&L.ffn, FfnKind::GeluF16}, h, f);
      o.add(f, y);  // mlp + attn, then the residual
      o.add(x, f);
    }
    output_head(s, hp_, NormKind::Layer, output_norm_, output_, Tensor{}, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, attn_norm_2;
    AttentionWeights attn;
    FfnWeights ffn;
  };

  HParams hp_;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_falcon(const gguf::File& file, HParams& hp) {
  return std::make_unique<Falcon>(file, hp);
}

}  // namespace ferrite::model
