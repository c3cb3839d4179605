// granitehybrid (IBM Granite 4.0 H, GraniteMoeHybridForCausalLM; llama.cpp's
// converter also maps Bamba here): Granite's four multipliers around a stack
// whose layers are Mamba-2 mixers (per-layer attention.head_count_kv 0) or
// grouped-query attention (RoPE only when rope.scaling.finetuned is true or
// absent, llama.cpp's switch; Granite 4.0 H has none), each followed by a
// feed-forward that is either softmax-routed experts (renormalised top-k)
// plus an ungated shared expert, or a dense SwiGLU:
//   x = embed(tokens) * embedding_scale
//   per layer: x += residual_scale * mixer(rms_norm(x))   (mixer: SSM or attention, scores * attention.scale)
//              x += residual_scale * ffn(rms_norm(x))
//   logits = output(rms_norm(x)) / logit_scale
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/bind_experts.h"
#include "model/bind_layer.h"
#include "model/blocks.h"
#include "model/layer_rope.h"
#include "model/ssm_block.h"

namespace ferrite::model {
namespace {

class GraniteHybrid : public Architecture {
 public:
  GraniteHybrid(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    const int64_t n_embd = hp.n_embd;
    if (hp.ssm_d_state <= 0) throw ModelError(file.path() + ": granitehybrid needs the ssm.* keys");
    hp.rope.neox = false;
    auto multiplier = [&](const char* key) {
      const float v = md.opt_float(md.arch_key(key)).value_or(0.0f);
      return v == 0.0f ? 1.0f : v;
    };
    embd_scale_ = multiplier("embedding_scale");
    residual_scale_ = multiplier("residual_scale");
    attn_scale_ = md.opt_float(md.arch_key("attention.scale")).value_or(0.0f);
    logit_scale_ = multiplier("logit_scale");
    use_rope_ = md.opt_bool(md.arch_key("rope.scaling.finetuned")).value_or(true);
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = bind_output_or_tied(b, hp, tok_embd_);

    const std::vector<uint64_t> kv =
        md.per_layer_uint(md.arch_key("attention.head_count_kv"), static_cast<uint64_t>(hp.n_layer));
    hp.recurrent_layers.assign(static_cast<size_t>(hp.n_layer), false);
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      const uint64_t layer_kv = kv[static_cast<size_t>(il)];
      L.recurrent = layer_kv == 0;
      if (L.recurrent) {
        hp.recurrent_layers[static_cast<size_t>(il)] = true;
        L.ssm = bind_ssm(b, hp, il);
      } else if (static_cast<int64_t>(layer_kv) != hp.n_head_kv) {
        throw ModelError(file.path() + ": attention layers with different head_count_kv are not supported");
      } else {
        L.attn = bind_attention(b, hp, il, QkvLayout::Separate);
      }
      L.ffn_norm = bind_norm(b, name("ffn_norm"), n_embd);
      if (has_experts(b, il)) {
        L.moe = bind_experts(b, hp, il, /*norm_weights=*/true);
        if (const gguf::TensorInfo* sh = file.find_tensor(name("ffn_up_shexp.weight"))) {
          const int64_t n_sh = sh->ne[1];
          L.moe.shexp.gate = b.require(name("ffn_gate_shexp.weight"), {n_embd, n_sh});
          L.moe.shexp.up = b.require(name("ffn_up_shexp.weight"), {n_embd, n_sh});
          L.moe.shexp.down = b.require(name("ffn_down_shexp.weight"), {n_sh, n_embd});
        }
      } else {
        L.ffn = bind_ffn(b, hp, il, FfnGate::Required);
      }
    }
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    const int rope = use_rope_ ? s.prepare_rope(rope_config(hp_.rope, nullptr)) : backend::kNoRope;
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    s.ops().scale(x, embd_scale_);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      const Act y = o.buffer(Buf::Y, n, n_embd);
      if (L.recurrent) {
        o.norm(NormKind::Rms, x, L.attn_norm, h, &L.ssm.in);
        o.ssm(ssm_spec(hp_, il, L.ssm), h, y);
      } else {
        backend::AttentionSpec a = attention_spec(hp_, il, L.attn, rope);
        a.scale = attn_scale_;
        o.norm(NormKind::Rms, x, L.attn_norm, h, qkv_input(L.attn));
        o.attention(a, h, y);
      }
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
    bool recurrent = false;
    Norm attn_norm, ffn_norm;
    SsmWeights ssm;
    AttentionWeights attn;
    FfnWeights ffn;
    MoeWeights moe;
  };
  HParams hp_;
  float embd_scale_ = 1.0f, residual_scale_ = 1.0f, attn_scale_ = 0.0f, logit_scale_ = 1.0f;
  bool use_rope_ = true;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_granitehybrid(const gguf::File& file, HParams& hp) {
  return std::make_unique<GraniteHybrid>(file, hp);
}

}  // namespace ferrite::model
