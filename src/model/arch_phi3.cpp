// phi3: pre-RMSNorm decoder with a fused QKV projection and a fused
// gate/up projection ([n_embd, 2 n_ff], gate first), NeoX RoPE, and LongRoPE
// frequency factors (rope_factors_short/long). Attention uses the
// sliding-window mask when the file declares a window.
//
// phimoe (Phi-3.5-MoE) is the same graph in llama.cpp (c392e50's build_phi3),
// with what its files add: RMSNorms with a bias (norm(x) * w + b: llama.cpp's
// definition, where the published model has LayerNorms), separate Q/K/V with
// biases, an output-projection bias, an output bias, and experts in every
// layer (softmax router, top-k probabilities renormalised; Phi-3.5-MoE: 16,
// top 2). llama.cpp reads no sliding window for phimoe: attention is global
// whatever attention.sliding_window says.
//
// LongRoPE (model/longrope.h): the long factors when the cache holds more
// cells than rope.scaling.original_context_length, else the short ones; the
// magnitude scale rope.scaling.attn_factor (or, with long factors and no
// such key, the LongRoPE definition from the contexts) applies to both.
#include <vector>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/bind_experts.h"
#include "model/bind_layer.h"
#include "model/blocks.h"
#include "model/longrope.h"

namespace ferrite::model {
namespace {

class Phi3 : public Architecture {
 public:
  Phi3(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    const int64_t n_embd = hp.n_embd;
    hp.rope.neox = true;
    hp.swa_layers.assign(static_cast<size_t>(hp.n_layer), hp.n_swa > 0);  // a window applies to every layer
    const int64_t n_pairs = hp.rope.n_rot / 2;
    rope_long_ = b.optional_vec("rope_factors_long.weight", n_pairs);
    if (auto f = md.opt_float(md.arch_key("rope.scaling.attn_factor"))) {
      hp.rope.yarn_attn_factor = *f;
    } else if (rope_long_) {
      hp.rope.yarn_attn_factor = longrope_attn_factor(hp.n_ctx_train, hp.rope.n_ctx_orig);
    }
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = b.require("output.weight", {n_embd, hp.n_vocab});
    output_b_ = b.optional_vec("output.bias", hp.n_vocab);
    rope_factors_ = b.optional_vec("rope_factors_short.weight", n_pairs);
    if (!rope_factors_) rope_factors_ = b.optional_vec("rope_freqs.weight", n_pairs);

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn = bind_attention(b, hp, il, QkvLayout::Either);
      L.ffn_norm = bind_norm(b, name("ffn_norm"), n_embd);
      if (has_experts(b, il)) {
        L.moe = bind_experts(b, hp, il, /*norm_weights=*/true);
      } else {
        if (hp.n_ff <= 0) throw ModelError(file.path() + ": phi3 needs feed_forward_length");
        L.ffn.up = b.require(name("ffn_up.weight"), {n_embd, 2 * hp.n_ff});
        L.ffn.down = b.require(name("ffn_down.weight"), {hp.n_ff, n_embd});
      }
    }
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    const int rope = s.prepare_rope(rope_config(
        hp_.rope, longrope_factors(rope_factors_ ? rope_factors_.f32() : nullptr,
                                   rope_long_ ? rope_long_.f32() : nullptr, s.kv.n_cells, hp_.rope.n_ctx_orig)));
    const bool sliding = hp_.n_swa > 0;
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);

    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      o.norm(NormKind::Rms, x, L.attn_norm, h, qkv_input(L.attn));
      o.attention(attention_spec(hp_, il, L.attn, rope, sliding), h, x, /*accumulate=*/true);
      if (L.moe.gate_inp) {
        o.norm(NormKind::Rms, x, L.ffn_norm, h, &L.moe.gate_exps);
        o.moe(L.moe, h, x, true);
      } else {
        o.norm(NormKind::Rms, x, L.ffn_norm, h, &L.ffn.up);
        o.feed_forward({&L.ffn, FfnKind::FusedSwiGlu}, h, x, true);
      }
    }
    output_head(s, hp_, NormKind::Rms, output_norm_, output_, output_b_, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, ffn_norm;
    AttentionWeights attn;
    FfnWeights ffn;  // up: gate | up fused [n_embd, 2 n_ff]
    MoeWeights moe;  // expert layers (moe.gate_inp set; phimoe)
  };

  HParams hp_;
  Tensor tok_embd_, output_, output_b_, rope_factors_, rope_long_;  // rope_factors_: short (or rope_freqs)
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_phi3(const gguf::File& file, HParams& hp) {
  return std::make_unique<Phi3>(file, hp);
}

std::unique_ptr<Architecture> make_phimoe(const gguf::File& file, HParams& hp) {
  hp.n_swa = 0;  // as llama.cpp, which never reads phimoe's attention.sliding_window
  return std::make_unique<Phi3>(file, hp);
}

}  // namespace ferrite::model
