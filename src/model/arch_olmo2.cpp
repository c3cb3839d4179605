// olmo2 (AllenAI OLMo 2): a decoder whose norms come after the blocks, not
// before them, with RMSNorm of q and k over the whole projection:
//   per layer: y = attn(x)    (q = rms_norm(x Wq) * attn_q_norm [n_q],
//                              k = rms_norm(x Wk) * attn_k_norm [n_kv], then NeoX RoPE)
//              x += rms_norm(y) * post_attention_norm
//              x += rms_norm(ffn(x)) * post_ffw_norm     (SwiGLU)
//   logits = output(rms_norm(x) * output_norm)
// (q/k norm weights of one head's length [head_dim] normalise each head.)
#include <vector>

#include "core/error.h"
#include "model/arch_factories.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

class Olmo2 : public Architecture {
 public:
  Olmo2(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
    hp.rope.neox = true;
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = bind_output_or_tied(b, hp, tok_embd_);
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn = bind_attention(b, hp, il, QkvLayout::Separate);
      L.attn.q_norm = bind_qk_norm(b, name("attn_q_norm.weight"), hp.head_dim, n_q, true);
      L.attn.k_norm = bind_qk_norm(b, name("attn_k_norm.weight"), hp.head_dim, n_kv, true);
      if (!L.attn.q_norm || !L.attn.k_norm) throw ModelError(file.path() + ": olmo2 needs attn_q_norm and attn_k_norm");
      L.post_attn_norm = bind_norm(b, name("post_attention_norm"), n_embd);
      L.ffn = bind_ffn(b, hp, il, FfnGate::Required);
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
      const Act y = o.buffer(Buf::Y, n, n_embd);
      o.attention(attention_spec(hp_, il, L.attn, rope), x, y);
      o.norm(NormKind::Rms, y, L.post_attn_norm, y);
      o.add(x, y);
      o.feed_forward({&L.ffn, FfnKind::SwiGlu}, x, y);
      o.norm(NormKind::Rms, y, L.post_ffn_norm, y);
      o.add(x, y);
    }
    output_head(s, hp_, NormKind::Rms, output_norm_, output_, Tensor{}, x, logits);
  }

 private:
  struct Layer {
    AttentionWeights attn;
    Norm post_attn_norm, post_ffn_norm;
    FfnWeights ffn;
  };

  HParams hp_;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_olmo2(const gguf::File& file, HParams& hp) {
  return std::make_unique<Olmo2>(file, hp);
}

}  // namespace ferrite::model
