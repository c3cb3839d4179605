#include "model/gpt_style.h"

#include <vector>

#include "core/error.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

class GptStyle : public Architecture {
 public:
  GptStyle(const gguf::File& file, HParams& hp, const GptStyleOptions& opt) : opt_(opt) {
    const WeightBinder b(file);
    const int64_t n_embd = hp.n_embd;
    if (hp.max_alibi_bias == 0.0f) hp.max_alibi_bias = opt.alibi_default;
    hp.rope.neox = opt.neox;
    // Keys without a rotary embedding carry no position: a context shift
    // moves the cells' positions (and so ALiBi's distances) and rotates nothing.
    if (!opt.rope) hp.rope.n_rot = 0;
    tok_embd_ = bind_token_embd(b, hp);
    if (const gguf::TensorInfo* pos = file.find_tensor("position_embd.weight")) {
      pos_embd_ = b.require("position_embd.weight", {n_embd, pos->ne[1]});
    }
    if (file.find_tensor("token_embd_norm.weight") != nullptr) tok_norm_ = bind_norm(b, "token_embd_norm", n_embd);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = b.optional("output.weight", {n_embd, hp.n_vocab});
    if (!output_) output_ = tok_embd_;
    output_b_ = b.optional_vec("output.bias", hp.n_vocab);

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      for (const char* unsupported : {"attn_q_norm.weight", "attn_k_norm.weight", "ffn_act.scales"}) {
        if (file.find_tensor(name(unsupported)) != nullptr) {
          throw ModelError(file.path() + ": " + name(unsupported) + " (" + hp.arch + ") is not supported");
        }
      }
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn = bind_attention(b, hp, il, QkvLayout::Either);
      if (!opt.parallel) L.ffn_norm = bind_norm(b, name("ffn_norm"), n_embd);
      bind_mlp(b, hp, il, L.ffn);
    }
    hp_ = hp;
  }

  // Up (and gate) then down, with their biases; or chatglm's gate | up.
  void bind_mlp(const WeightBinder& b, const HParams& hp, int64_t il, FfnWeights& f) const {
    if (!opt_.fused_gate_up) {
      f = bind_ffn(b, hp, il, FfnGate::Optional);
      return;
    }
    auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
    const int64_t n_up = b.file().tensor(name("ffn_up.weight")).ne[1];
    if (n_up % 2 != 0) throw ModelError(b.file().path() + ": " + name("ffn_up.weight") + " does not hold gate | up");
    f.up = b.require(name("ffn_up.weight"), {hp.n_embd, n_up});
    f.down = b.require(name("ffn_down.weight"), {n_up / 2, hp.n_embd});
  }

  void forward(Step& s, float* logits) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    const int rope = opt_.rope ? s.prepare_rope(rope_config(hp_.rope, nullptr)) : backend::kNoRope;
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    if (pos_embd_) add_position_embeddings(s, pos_embd_, x);
    if (tok_norm_.w) s.ops().norm(opt_.norm, x, tok_norm_, x);
    const FfnKind ffn_kind = opt_.fused_gate_up ? FfnKind::FusedSwiGlu
                             : opt_.gelu        ? FfnKind::GeluF16
                                                : FfnKind::SwiGlu;

    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      backend::AttentionSpec a = attention_spec(hp_, il, L.attn, rope);
      a.scale = opt_.attn_scale;
      a.clamp_qkv = opt_.clamp_qkv;
      o.norm(opt_.norm, x, L.attn_norm, h, qkv_input(L.attn));
      if (opt_.parallel) {
        const Act y = o.buffer(Buf::Y, n, n_embd);
        const Act f = o.buffer(Buf::F, n, n_embd);
        o.attention(a, h, y);
        o.feed_forward({&L.ffn, ffn_kind}, h, f);
        o.add(y, f);  // attn + mlp, then the residual
        o.add(x, y);
      } else {
        o.attention(a, h, x, /*accumulate=*/true);
        o.norm(opt_.norm, x, L.ffn_norm, h, ffn_input(L.ffn));
        o.feed_forward({&L.ffn, ffn_kind}, h, x, true);
      }
    }
    output_head(s, hp_, opt_.norm, output_norm_, output_, output_b_, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, ffn_norm;
    AttentionWeights attn;
    FfnWeights ffn;
  };

  GptStyleOptions opt_;
  HParams hp_;
  Tensor tok_embd_, pos_embd_, output_, output_b_;
  Norm tok_norm_, output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_gpt_style(const gguf::File& file, HParams& hp, const GptStyleOptions& opt) {
  return std::make_unique<GptStyle>(file, hp, opt);
}

}  // namespace ferrite::model
