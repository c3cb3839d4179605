// gpt-oss (OpenAI's open-weight MoE; ik_llama.cpp's LLM_ARCH_OPENAI_MOE):
// a pre-RMSNorm decoder with
//   - Q, K, V and output projections with biases, NeoX RoPE (YaRN scaling
//     from rope.scaling.*), scores scaled by 1 / sqrt(rope.dimension_count);
//     YaRN's correction range unrounded unless rope.scaling.yarn_truncate
//     says true (yarn_truncate below);
//   - attention sinks: blk.N.attn_sinks [n_head], a learned logit per head
//     joining the softmax's denominator of every query row (backend/weight.h);
//   - sliding-window attention (attention.sliding_window, required) on the
//     even layers 0, 2, 4, ..., full attention on the odd ones;
//   - experts in every layer behind blk.N.post_attention_norm: a router with
//     a bias, top-k on the logits and the softmax over the k chosen logits
//     (MoeGating::SoftmaxWeight, no renormalisation), every expert's gate, up
//     and down with biases, and the clamped SwiGLU
//     g * sigmoid(1.702 g) * (clamp(u, -7, 7) + 1), g = min(gate, 7):
//   per layer: x += attn(rms_norm(x)); x += moe(rms_norm'(x))
//   logits = output(rms_norm(x))
// Files whose experts hold gate and up fused (ffn_gate_up_exps) are not read.
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/metadata.h"
#include "gguf/tensor_type.h"
#include "model/arch_factories.h"
#include "model/bind_experts.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

constexpr float kOaiAlpha = 1.702f;  // the SwiGLU's sigmoid slope
constexpr float kOaiLimit = 7.0f;    // its clamp of gate (above) and up (both sides)
constexpr int64_t kSlidingPattern = 2;  // layer il slides when il % 2 == 0

// gpt-oss was trained with YaRN's correction range left fractional: OpenAI's
// reference (gpt_oss/torch/model.py, RotaryEmbedding) never rounds low and
// high, and gpt-oss-20b's config.json says rope_scaling truncate false for
// transformers (vLLM and SGLang changed their YaRN to match: vllm#28244,
// sglang#14270). llama.cpp's converter writes no key for it (its gpt-oss
// files carry rope.scaling.type, factor and original_context_length, the
// newer ones yarn_beta_fast/slow too) and llama.cpp rounds, as for every
// model. So a gpt-oss file without rope.scaling.yarn_truncate (every
// llama.cpp-converted one) runs unrounded, as the model was trained;
// `ferrite convert` writes the key from the config, and a file that says
// true (the tiny test models whose goldens llama.cpp computed) is rounded.
bool yarn_truncate(const gguf::Metadata& md) {
  return md.opt_bool(md.arch_key("rope.scaling.yarn_truncate")).value_or(false);
}

// An f32 tensor of this shape (the experts' stacked biases).
Tensor require_f32(const WeightBinder& b, const std::string& name, std::initializer_list<int64_t> shape) {
  Tensor t = b.require(name, shape);
  if (t.type() != TensorType::F32) {
    throw ModelError(b.file().path() + ": tensor " + name + " must be f32, is " + tensor_type_name(t.type()));
  }
  return t;
}

class GptOss : public Architecture {
 public:
  GptOss(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    const int64_t n_embd = hp.n_embd;
    hp.rope.neox = true;
    hp.rope.yarn_truncate = yarn_truncate(md);
    if (hp.n_swa <= 0) throw ModelError(file.path() + ": gpt-oss needs attention.sliding_window");
    if (hp.n_expert == 0) throw ModelError(file.path() + ": gpt-oss needs expert_count");
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = b.require("output.weight", {n_embd, hp.n_vocab});

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      hp.swa_layers.push_back(is_sliding(il));  // the runtime's window cache holds these layers' window only
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn = bind_attention(b, hp, il, QkvLayout::Separate);
      if (!L.attn.bq || !L.attn.bk || !L.attn.bv || !L.attn.bo) {
        throw ModelError(file.path() + ": gpt-oss needs the biases of attn_q, attn_k, attn_v and attn_output (layer " +
                         std::to_string(il) + ")");
      }
      L.attn.sinks = b.require_vec(name("attn_sinks.weight"), hp.n_head);
      L.ffn_norm = bind_norm(b, name("post_attention_norm"), n_embd);
      L.moe = bind_experts(b, hp, il, /*norm_weights=*/false);
      const int64_t n_ff = L.moe.up_exps.ne(1);
      L.moe.gating = backend::MoeGating::SoftmaxWeight;
      L.moe.gate_inp_b = b.require_vec(name("ffn_gate_inp.bias"), hp.n_expert);
      L.moe.gate_exps_b = require_f32(b, name("ffn_gate_exps.bias"), {n_ff, hp.n_expert});
      L.moe.up_exps_b = require_f32(b, name("ffn_up_exps.bias"), {n_ff, hp.n_expert});
      L.moe.down_exps_b = require_f32(b, name("ffn_down_exps.bias"), {n_embd, hp.n_expert});
      L.moe.oai_alpha = kOaiAlpha;
      L.moe.oai_limit = kOaiLimit;
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
      backend::AttentionSpec a = attention_spec(hp_, il, L.attn, rope, is_sliding(il));
      a.scale = 1.0f / std::sqrt(static_cast<float>(hp_.rope.n_rot));
      o.norm(NormKind::Rms, x, L.attn_norm, h, qkv_input(L.attn));
      o.attention(a, h, x, /*accumulate=*/true);
      o.norm(NormKind::Rms, x, L.ffn_norm, h, &L.moe.gate_exps);
      o.moe(L.moe, h, x, true);
    }
    output_head(s, hp_, NormKind::Rms, output_norm_, output_, Tensor{}, x, logits);
  }

  static bool is_sliding(int64_t il) { return il % kSlidingPattern < kSlidingPattern - 1; }

 private:
  struct Layer {
    Norm attn_norm, ffn_norm;  // ffn_norm: the file's post_attention_norm
    AttentionWeights attn;
    MoeWeights moe;
  };

  HParams hp_;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_gpt_oss(const gguf::File& file, HParams& hp) {
  return std::make_unique<GptOss>(file, hp);
}

}  // namespace ferrite::model
