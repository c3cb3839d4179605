// The parallel-block decoders: one norm feeds attention and the
// feed-forward (SwiGLU, adjacent-pair RoPE) side by side.
// command-r (Cohere Command-R) and cohere2 (Command R7B, Command A):
// LayerNorm without bias, and the logits multiplied by logit_scale:
//   per layer: h = layer_norm(x) * attn_norm
//              x = (x + ffn(h)) + attn(h)        (llama.cpp's order of the sums)
//   logits = output(layer_norm(x) * output_norm) * logit_scale   (output tied)
// cohere2 interleaves: in every 4 layers the first 3 attend within the
// sliding window (attention.sliding_window) with RoPE, the 4th attends
// globally without any position encoding.
// Command R+ (n_layer >= 64) adds per-head LayerNorms of q and k with a
// weight per head; those files are refused (attn_q_norm present).
// plamo (PFN PLaMo-13B): RMSNorm, untied output, no logit scale:
//   per layer: h = rms_norm(x) * attn_norm;  x = x + (ffn(h) + attn(h))
#include <vector>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

constexpr int64_t kCohere2Pattern = 4;  // layers per group; the last is global

enum class Variant { CommandR, Cohere2, Plamo };

class CommandR : public Architecture {
 public:
  CommandR(const gguf::File& file, HParams& hp, Variant variant) : plamo_(variant == Variant::Plamo) {
    const bool cohere2 = variant == Variant::Cohere2;
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    const int64_t n_embd = hp.n_embd;
    hp.rope.neox = false;
    logit_scale_ = md.opt_float(md.arch_key("logit_scale")).value_or(0.0f);
    if (logit_scale_ == 0.0f || plamo_) logit_scale_ = 1.0f;  // absent or 0: none (as llama.cpp)
    if (cohere2 && hp.n_swa <= 0) throw ModelError(file.path() + ": cohere2 needs attention.sliding_window");
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = bind_output_or_tied(b, hp, tok_embd_);
    rope_freqs_ = b.optional_vec("rope_freqs.weight", hp.rope.n_rot / 2);
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      if (file.find_tensor(name("attn_q_norm.weight")) != nullptr) {
        throw ModelError(file.path() + ": per-head q/k LayerNorms (Command R+) are not supported");
      }
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn = bind_attention(b, hp, il, QkvLayout::Separate);
      L.ffn = bind_ffn(b, hp, il, FfnGate::Required);
      L.sliding = cohere2 && il % kCohere2Pattern < kCohere2Pattern - 1;
      L.rope = !cohere2 || L.sliding;
      hp.swa_layers.push_back(L.sliding);
    }
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    const NormKind norm = plamo_ ? NormKind::Rms : NormKind::Layer;
    const int rope = s.prepare_rope(rope_config(hp_.rope, rope_freqs_ ? rope_freqs_.f32() : nullptr));
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      const backend::AttentionSpec a = attention_spec(hp_, il, L.attn, L.rope ? rope : backend::kNoRope, L.sliding);
      o.norm(norm, x, L.attn_norm, h, qkv_input(L.attn));
      if (plamo_) {
        // ffn + attn, then the residual.
        const Act f = o.buffer(Buf::F, n, n_embd);
        o.feed_forward({&L.ffn, FfnKind::SwiGlu}, h, f);
        o.attention(a, h, f, /*accumulate=*/true);
        o.add(x, f);
      } else {
        // x + ffn, then + attn.
        o.feed_forward({&L.ffn, FfnKind::SwiGlu}, h, x, /*accumulate=*/true);
        o.attention(a, h, x, true);
      }
    }
    output_head(s, hp_, norm, output_norm_, output_, Tensor{}, x, logits, nullptr, logit_scale_);
  }

 private:
  struct Layer {
    Norm attn_norm;
    AttentionWeights attn;
    FfnWeights ffn;
    bool sliding = false, rope = true;
  };

  bool plamo_ = false;
  HParams hp_;
  float logit_scale_ = 1.0f;
  Tensor tok_embd_, output_, rope_freqs_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_command_r(const gguf::File& file, HParams& hp) {
  return std::make_unique<CommandR>(file, hp, Variant::CommandR);
}

std::unique_ptr<Architecture> make_cohere2(const gguf::File& file, HParams& hp) {
  return std::make_unique<CommandR>(file, hp, Variant::Cohere2);
}

std::unique_ptr<Architecture> make_plamo(const gguf::File& file, HParams& hp) {
  return std::make_unique<CommandR>(file, hp, Variant::Plamo);
}

}  // namespace ferrite::model
