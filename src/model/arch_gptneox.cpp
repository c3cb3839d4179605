// gptneox (Pythia, GPT-NeoX): LayerNorm with biases, a fused QKV projection
// with bias, NeoX RoPE over only the first rope.dimension_count dimensions of
// each head, a GELU MLP with biases, and (use_parallel_residual, the default)
// attention and MLP computed side by side from the same input:
//   parallel:   x += attn(ln1(x)) + mlp(ln2(x))
//   sequential: x += attn(ln1(x)); x += mlp(ln2(x))
#include <vector>

#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

class GptNeoX : public Architecture {
 public:
  GptNeoX(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    const int64_t n_embd = hp.n_embd;
    hp.rope.neox = true;
    parallel_ = md.opt_bool(md.arch_key("use_parallel_residual")).value_or(true);
    tok_embd_ = bind_token_embd(b, hp);
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
      o.norm(NormKind::Layer, x, L.attn_norm, h, qkv_input(L.attn));
      const backend::AttentionSpec a = attention_spec(hp_, il, L.attn, rope);
      if (parallel_) {
        o.attention(a, h, y);
        o.norm(NormKind::Layer, x, L.ffn_norm, h, ffn_input(L.ffn));
        o.feed_forward({&L.ffn, FfnKind::GeluF16}, h, f);
        o.add(f, y);  // mlp + attn, then the residual
        o.add(x, f);
      } else {
        o.attention(a, h, x, /*accumulate=*/true);
        o.norm(NormKind::Layer, x, L.ffn_norm, h, ffn_input(L.ffn));
        o.feed_forward({&L.ffn, FfnKind::GeluF16}, h, x, true);
      }
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
  bool parallel_ = true;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_gptneox(const gguf::File& file, HParams& hp) {
  return std::make_unique<GptNeoX>(file, hp);
}

}  // namespace ferrite::model
