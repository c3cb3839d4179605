// granite (IBM Granite 3.x dense), granitemoe (Granite 3.x MoE) and minicpm
// (MiniCPM 1/2, which llama.cpp runs as the same graph): the Llama decoder
// (adjacent-pair RoPE, GQA, SwiGLU or softmax-routed experts with
// renormalised top-k weights, optional Q/K/V/O biases, tied output when the
// file has no output.weight) with four multipliers from the file:
//   x = embed(tokens) * embedding_scale
//   per layer: x += residual_scale * attn(rms_norm(x))    (scores scaled by attention.scale)
//              x += residual_scale * ffn(rms_norm(x))     (ffn: dense or experts)
//   logits = output(rms_norm(x)) / logit_scale
// (absent or 0: 1, 1/sqrt(head_dim), 1 and 1, as llama.cpp).
#include <vector>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/bind_experts.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

class Granite : public Architecture {
 public:
  Granite(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    const int64_t n_embd = hp.n_embd;
    hp.rope.neox = false;
    auto multiplier = [&](const char* key) {
      const float v = md.opt_float(md.arch_key(key)).value_or(0.0f);
      return v == 0.0f ? 1.0f : v;
    };
    embd_scale_ = multiplier("embedding_scale");
    residual_scale_ = multiplier("residual_scale");
    attn_scale_ = md.opt_float(md.arch_key("attention.scale")).value_or(0.0f);
    logit_scale_ = multiplier("logit_scale");
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = bind_output_or_tied(b, hp, tok_embd_);
    rope_freqs_ = b.optional_vec("rope_freqs.weight", hp.rope.n_rot / 2);

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn = bind_attention(b, hp, il, QkvLayout::Separate);
      L.ffn_norm = bind_norm(b, name("ffn_norm"), n_embd);
      if (file.find_tensor(name("ffn_gate_inp.weight")) != nullptr) {
        L.moe = bind_experts(b, hp, il, /*norm_weights=*/true);
      } else {
        L.ffn = bind_ffn(b, hp, il, FfnGate::Required);
      }
    }
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    const int rope = s.prepare_rope(rope_config(hp_.rope, rope_freqs_ ? rope_freqs_.f32() : nullptr));
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    s.ops().scale(x, embd_scale_);

    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      const Act y = o.buffer(Buf::Y, n, n_embd);
      backend::AttentionSpec a = attention_spec(hp_, il, L.attn, rope);
      a.scale = attn_scale_;
      o.norm(NormKind::Rms, x, L.attn_norm, h, qkv_input(L.attn));
      o.attention(a, h, y);
      o.scale(y, residual_scale_);
      o.add(x, y);

      if (L.moe.gate_inp) {
        o.norm(NormKind::Rms, x, L.ffn_norm, h, &L.moe.gate_exps);
        o.moe(L.moe, h, y);
      } else {
        o.norm(NormKind::Rms, x, L.ffn_norm, h, ffn_input(L.ffn));
        o.feed_forward({&L.ffn, FfnKind::SwiGlu}, h, y);
      }
      o.scale(y, residual_scale_);
      o.add(x, y);
    }
    output_head(s, hp_, NormKind::Rms, output_norm_, output_, Tensor{}, x, logits, nullptr, 1.0f / logit_scale_);
  }

 private:
  struct Layer {
    Norm attn_norm, ffn_norm;
    AttentionWeights attn;
    FfnWeights ffn;  // dense layers
    MoeWeights moe;  // expert layers (moe.gate_inp set)
  };

  HParams hp_;
  float embd_scale_ = 1.0f, residual_scale_ = 1.0f, attn_scale_ = 0.0f, logit_scale_ = 1.0f;
  Tensor tok_embd_, output_, rope_freqs_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_granite(const gguf::File& file, HParams& hp) {
  return std::make_unique<Granite>(file, hp);
}

std::unique_ptr<Architecture> make_granitemoe(const gguf::File& file, HParams& hp) {
  return std::make_unique<Granite>(file, hp);
}

std::unique_ptr<Architecture> make_minicpm(const gguf::File& file, HParams& hp) {
  return std::make_unique<Granite>(file, hp);
}

}  // namespace ferrite::model
