// glm4 (THUDM GLM-4-0414): pre- and post-norms around both blocks, partial
// adjacent-pair RoPE (rope.dimension_count of the head, half of it in the
// released models), Q/K/V separate with optional biases or fused attn_qkv
// (+ bias), no output bias, and a fused SwiGLU whose ffn_up holds gate | up:
//   per layer: y = attn(rms_norm(x) * attn_norm)
//              x += rms_norm(y) * post_attention_norm
//              y = down(silu(g) * u), g | u = ffn_up (rms_norm(x) * ffn_norm)
//              x += rms_norm(y) * post_ffw_norm
//   logits = output(rms_norm(x) * output_norm)   (output tied when absent)
#include <vector>

#include "model/arch_factories.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

class Glm4 : public Architecture {
 public:
  Glm4(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const int64_t n_embd = hp.n_embd;
    hp.rope.neox = false;
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = bind_output_or_tied(b, hp, tok_embd_);
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn = bind_attention(b, hp, il, QkvLayout::Either);
      L.post_attn_norm = bind_norm(b, name("post_attention_norm"), n_embd);
      L.ffn_norm = bind_norm(b, name("ffn_norm"), n_embd);
      const int64_t n_ff = file.tensor(name("ffn_down.weight")).ne[0];
      L.ffn.up = b.require(name("ffn_up.weight"), {n_embd, 2 * n_ff});  // gate | up
      L.ffn.down = b.require(name("ffn_down.weight"), {n_ff, n_embd});
      L.post_ffn_norm = bind_norm(b, name("post_ffw_norm"), n_embd);
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
      o.norm(NormKind::Rms, x, L.attn_norm, h, qkv_input(L.attn));
      o.attention(attention_spec(hp_, il, L.attn, rope), h, y);
      o.norm(NormKind::Rms, y, L.post_attn_norm, y);
      o.add(x, y);
      o.norm(NormKind::Rms, x, L.ffn_norm, h, &L.ffn.up);
      o.feed_forward({&L.ffn, FfnKind::FusedSwiGlu}, h, y);
      o.norm(NormKind::Rms, y, L.post_ffn_norm, y);
      o.add(x, y);
    }
    output_head(s, hp_, NormKind::Rms, output_norm_, output_, Tensor{}, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, post_attn_norm, ffn_norm, post_ffn_norm;
    AttentionWeights attn;
    FfnWeights ffn;
  };

  HParams hp_;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_glm4(const gguf::File& file, HParams& hp) { return std::make_unique<Glm4>(file, hp); }

}  // namespace ferrite::model
