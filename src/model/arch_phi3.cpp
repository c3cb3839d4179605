// phi3: pre-RMSNorm decoder with a fused QKV projection and a fused
// gate/up projection ([n_embd, 2 n_ff], gate first), NeoX RoPE, and LongRoPE
// frequency factors (rope_factors_short/long). Attention uses the
// sliding-window mask when the file declares a window.
//
// phimoe (Phi-3.5-MoE) as transformers' PhimoeForCausalLM defines it: the
// same graph with LayerNorms (weight and bias; epsilon
// attention.layer_norm_epsilon, else the attention.layer_norm_rms_epsilon
// that llama.cpp's converter writes), separate Q/K/V with biases, an
// output-projection bias, an output bias, and experts in every layer routed
// by "sparsemixer" (backend::MoeGating::SparseMixer, cpu/ops/sparsemixer.h;
// Phi-3.5-MoE: 16 experts, 2 used) with the router jitter of the key
// phimoe.router_jitter_noise, ferrite's own (llama.cpp's converter writes
// none; absent: Phi-3.5-MoE's 0.01). The window of attention.sliding_window
// applies to every layer, as transformers' mask does.
// llama.cpp c392e50 runs phimoe with RMSNorms and a renormalised softmax
// top 2 instead and ignores the window: its logits for the tiny phimoe file
// of tests/model are 3.3 from the definition's (tests/model/phimoe_test.cpp);
// ferrite's, on a converted transformers checkpoint, 1.4e-4 from
// transformers' (tests/convert fixtures tiny/phimoe).
//
// LongRoPE (model/longrope.h): the long factors when the cache holds more
// cells than rope.scaling.original_context_length, else the short ones; the
// magnitude scale rope.scaling.attn_factor (or, with long factors and no
// such key, the LongRoPE definition from the contexts) applies to both.
#include <cmath>
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

// Phi-3.5-MoE's router_jitter_noise (transformers' PhimoeConfig default).
constexpr float kPhimoeJitter = 0.01f;

class Phi3 : public Architecture {
 public:
  Phi3(const gguf::File& file, HParams& hp, bool phimoe) : norm_(phimoe ? NormKind::Layer : NormKind::Rms) {
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    const int64_t n_embd = hp.n_embd;
    float jitter = 0.0f;
    if (phimoe) {
      hp.norm_eps = md.opt_float(md.arch_key("attention.layer_norm_epsilon")).value_or(hp.norm_rms_eps);
      jitter = md.opt_float(md.arch_key("router_jitter_noise")).value_or(kPhimoeJitter);
      if (!std::isfinite(jitter) || jitter < 0.0f) {
        throw ModelError(file.path() + ": " + md.arch_key("router_jitter_noise") + " is " + std::to_string(jitter) +
                         " (a finite value >= 0)");
      }
    }
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
        L.moe = bind_experts(b, hp, il, /*norm_weights=*/!phimoe);
        if (phimoe) {
          L.moe.gating = backend::MoeGating::SparseMixer;
          L.moe.jitter = jitter;
        }
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
      o.norm(norm_, x, L.attn_norm, h, qkv_input(L.attn));
      o.attention(attention_spec(hp_, il, L.attn, rope, sliding), h, x, /*accumulate=*/true);
      if (L.moe.gate_inp) {
        o.norm(norm_, x, L.ffn_norm, h, &L.moe.gate_exps);
        o.moe(L.moe, h, x, true);
      } else {
        o.norm(norm_, x, L.ffn_norm, h, &L.ffn.up);
        o.feed_forward({&L.ffn, FfnKind::FusedSwiGlu}, h, x, true);
      }
    }
    output_head(s, hp_, norm_, output_norm_, output_, output_b_, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, ffn_norm;
    AttentionWeights attn;
    FfnWeights ffn;  // up: gate | up fused [n_embd, 2 n_ff]
    MoeWeights moe;  // expert layers (moe.gate_inp set; phimoe)
  };

  NormKind norm_;  // phi3: RMSNorm; phimoe: LayerNorm
  HParams hp_;
  Tensor tok_embd_, output_, output_b_, rope_factors_, rope_long_;  // rope_factors_: short (or rope_freqs)
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_phi3(const gguf::File& file, HParams& hp) {
  return std::make_unique<Phi3>(file, hp, /*phimoe=*/false);
}

std::unique_ptr<Architecture> make_phimoe(const gguf::File& file, HParams& hp) {
  return std::make_unique<Phi3>(file, hp, /*phimoe=*/true);
}

}  // namespace ferrite::model
