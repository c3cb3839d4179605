// glm4moe (Z.ai GLM-4.5, GLM-4.5-Air, GLM-4.6): the pre-norm decoder with
// NeoX RoPE over part of each head (rope.dimension_count), Q/K/V biases,
// optional per-head RMSNorm of q and k (attn_q_norm, attn_k_norm [head_dim]),
// and after `leading_dense_block_count` SwiGLU layers, routed experts chosen
// by sigmoid scores plus a selection bias (exp_probs_b) with one shared
// expert. The feed-forward's norm is stored as blk.N.post_attention_norm.
//   per layer: x += attn(rms_norm(x) * attn_norm)
//              x += ffn_or_moe(rms_norm(x) * post_attention_norm)
//   logits = output(rms_norm(x) * output_norm)
// The last `nextn_predict_layers` blocks are the multi-token-prediction head
// (blk.N.nextn.*), which plain decoding does not run: they are neither bound
// nor given cache rows. Facts from ik_llama.cpp 8337e4c (build_glm4.cpp,
// llama-hparams.cpp): expert_gating_func defaults to sigmoid,
// expert_weights_norm to false, expert_weights_scale is required.
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/bind_experts.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

class Glm4Moe : public Architecture {
 public:
  Glm4Moe(const gguf::File& file, HParams& hp) {
    const gguf::Metadata md(file);
    auto key = [&](const char* s) { return md.arch_key(s); };
    const std::string& path = file.path();
    const int64_t n_nextn = static_cast<int64_t>(md.opt_uint(key("nextn_predict_layers")).value_or(0));
    const int64_t n_dense = static_cast<int64_t>(md.opt_uint(key("leading_dense_block_count")).value_or(0));
    if (n_nextn < 0 || n_nextn >= hp.n_layer || n_dense < 0 || n_dense > hp.n_layer - n_nextn) {
      throw ModelError(path + ": inconsistent glm4moe layers (block_count " + std::to_string(hp.n_layer) +
                       ", nextn_predict_layers " + std::to_string(n_nextn) + ", leading_dense_block_count " +
                       std::to_string(n_dense) + ")");
    }
    const uint64_t gating = md.opt_uint(key("expert_gating_func")).value_or(2);
    if (gating != 1 && gating != 2) {
      throw ModelError(path + ": glm4moe expert_gating_func " + std::to_string(gating) + " (1 softmax, 2 sigmoid)");
    }
    const float w_scale = md.get_float(key("expert_weights_scale"));
    const bool w_norm = md.opt_bool(key("expert_weights_norm")).value_or(false);
    hp.n_layer -= n_nextn;  // the prediction head's blocks: no cache, not run
    hp.rope.neox = true;

    const WeightBinder b(file);
    const int64_t n_embd = hp.n_embd, hd = hp.head_dim;
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = bind_output_or_tied(b, hp, tok_embd_);
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn = bind_attention(b, hp, il, QkvLayout::Separate);
      L.attn.q_norm = bind_qk_norm(b, name("attn_q_norm.weight"), hd, hp.n_embd_q(), false);
      L.attn.k_norm = bind_qk_norm(b, name("attn_k_norm.weight"), hd, hp.n_embd_kv(), false);
      L.ffn_norm = bind_norm(b, name("post_attention_norm"), n_embd);
      if (il < n_dense) {
        L.ffn = bind_ffn(b, hp, il, FfnGate::Required);
        continue;
      }
      if (!has_experts(b, il)) throw ModelError(path + ": glm4moe layer " + std::to_string(il) + " has no experts");
      MoeWeights& m = L.moe;
      m = bind_experts(b, hp, il, w_norm);
      m.gating = gating == 2 ? backend::MoeGating::Sigmoid : backend::MoeGating::Softmax;
      m.probs_bias = b.optional_vec(name("exp_probs_b.bias"), hp.n_expert);
      m.weights_scale = w_scale;
      if (const gguf::TensorInfo* sh = file.find_tensor(name("ffn_up_shexp.weight"))) {
        const int64_t n_sh = sh->ne[1];
        m.shexp.gate = b.require(name("ffn_gate_shexp.weight"), {n_embd, n_sh});
        m.shexp.up = b.require(name("ffn_up_shexp.weight"), {n_embd, n_sh});
        m.shexp.down = b.require(name("ffn_down_shexp.weight"), {n_sh, n_embd});
      }
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
      o.norm(NormKind::Rms, x, L.attn_norm, h, qkv_input(L.attn));
      o.attention(attention_spec(hp_, il, L.attn, rope), h, x, /*accumulate=*/true);
      if (L.moe.gate_inp) {
        o.norm(NormKind::Rms, x, L.ffn_norm, h, &L.moe.gate_exps);
        o.moe(L.moe, h, x, true);
      } else {
        o.norm(NormKind::Rms, x, L.ffn_norm, h, ffn_input(L.ffn));
        o.feed_forward({&L.ffn, FfnKind::SwiGlu}, h, x, true);
      }
    }
    output_head(s, hp_, NormKind::Rms, output_norm_, output_, Tensor{}, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, ffn_norm;
    AttentionWeights attn;
    FfnWeights ffn;  // dense layers
    MoeWeights moe;  // expert layers (moe.gate_inp set)
  };

  HParams hp_;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_glm4moe(const gguf::File& file, HParams& hp) {
  return std::make_unique<Glm4Moe>(file, hp);
}

}  // namespace ferrite::model
