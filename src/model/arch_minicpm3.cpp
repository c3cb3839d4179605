// minicpm3 (OpenBMB MiniCPM3-4B): deepseek2's multi-head latent attention
// (low-rank queries, a compressed KV latent; here in the absorbed form over a
// latent cache, backend::MlaWeights) with NeoX RoPE on the rotary parts and
// LongRoPE's per-pair factors (rope_factors_short/long), in a dense SwiGLU
// decoder with MiniCPM's scalings:
//   x = embed(tokens) * 12
//   per layer: x += 1.4 / sqrt(n_layer) * attn(rms_norm(x) * attn_norm)
//              x += 1.4 / sqrt(n_layer) * ffn(rms_norm(x) * ffn_norm)
//   logits = output(rms_norm(x) * output_norm * 256 / n_embd)   (output tied when absent)
// The three constants (scale_emb, scale_depth, dim_model_base of the released
// model) are fixed in llama.cpp c392e50's graph, and its converter writes no
// key for them; scores are scaled by 1 / sqrt(key_length); value heads are
// n_embd / n_head wide unless attention.value_length says otherwise (as
// llama.cpp's hyperparameters default them).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/bind_layer.h"
#include "model/blocks.h"
#include "model/longrope.h"
#include "model/mla_absorb.h"

namespace ferrite::model {
namespace {

constexpr float kScaleEmbd = 12.0f, kScaleDepth = 1.4f, kEmbdBase = 256.0f;

class MiniCpm3 : public Architecture {
 public:
  MiniCpm3(const gguf::File& file, HParams& hp) {
    const gguf::Metadata md(file);
    auto key = [&](const char* s) { return md.arch_key(s); };
    const int64_t n_embd = hp.n_embd, H = hp.n_head, qk = hp.head_dim, rope = hp.rope.n_rot;
    const int64_t q_lora = static_cast<int64_t>(md.get_uint(key("attention.q_lora_rank")));
    const int64_t kv_lora = static_cast<int64_t>(md.get_uint(key("attention.kv_lora_rank")));
    const int64_t v_dim =
        static_cast<int64_t>(md.opt_uint(key("attention.value_length")).value_or(static_cast<uint64_t>(n_embd / H)));
    if (rope <= 0 || rope % 2 != 0 || qk <= rope || q_lora <= 0 || q_lora > (1 << 16) || kv_lora <= 0 ||
        kv_lora > (1 << 16) || v_dim <= 0 || v_dim > (1 << 16) || hp.n_head_kv != H) {
      throw ModelError(file.path() + ": inconsistent minicpm3 sizes (key_length " + std::to_string(qk) +
                       ", rope.dimension_count " + std::to_string(rope) + ", q_lora_rank " + std::to_string(q_lora) +
                       ", kv_lora_rank " + std::to_string(kv_lora) + ", value " + std::to_string(v_dim) +
                       ", head_count_kv " + std::to_string(hp.n_head_kv) + " vs " + std::to_string(H) + ")");
    }
    hp.rope.neox = true;
    spec_.n_head = H;
    spec_.nope = qk - rope;
    spec_.n_rot = rope;
    spec_.kv_lora = kv_lora;
    spec_.v_dim = v_dim;
    spec_.scale = 1.0f / std::sqrt(static_cast<float>(qk));
    residual_scale_ = kScaleDepth / std::sqrt(static_cast<float>(hp.n_layer));
    // The cache: one latent row per token and layer (ops.h MlaSpec).
    hp.n_head_kv = 1;
    hp.head_dim = rope + kv_lora;

    const WeightBinder b(file);
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = bind_output_or_tied(b, hp, tok_embd_);
    rope_short_ = b.optional_vec("rope_factors_short.weight", rope / 2);
    rope_long_ = b.optional_vec("rope_factors_long.weight", rope / 2);
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      MlaLayer mla = bind_mla_layer(b, il, n_embd, spec_, q_lora);
      L.attn = mla.w;
      L.absorbed = std::move(mla.absorbed);
      L.ffn_norm = bind_norm(b, name("ffn_norm"), n_embd);
      L.ffn = bind_ffn(b, hp, il, FfnGate::Required);
    }
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    const int rope = s.prepare_rope(rope_config(
        hp_.rope, longrope_factors(rope_short_ ? rope_short_.f32() : nullptr, rope_long_ ? rope_long_.f32() : nullptr,
                                   s.kv.n_cells, hp_.rope.n_ctx_orig)));
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    s.ops().scale(x, kScaleEmbd);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      const Act y = o.buffer(Buf::Y, n, n_embd);
      o.norm(NormKind::Rms, x, L.attn_norm, h, L.attn.wq_a ? &L.attn.wq_a : &L.attn.wq);
      backend::MlaSpec spec = spec_;
      spec.layer = il;
      spec.w = &L.attn;
      spec.rope = rope;
      o.mla_attention(spec, h, y);
      o.scale(y, residual_scale_);
      o.add(x, y);
      o.norm(NormKind::Rms, x, L.ffn_norm, h, ffn_input(L.ffn));
      o.feed_forward({&L.ffn, FfnKind::SwiGlu}, h, y);
      o.scale(y, residual_scale_);
      o.add(x, y);
    }
    output_head(s, hp_, NormKind::Rms, output_norm_, output_, Tensor{}, x, logits, nullptr,
                kEmbdBase / static_cast<float>(n_embd));
  }

 private:
  struct Layer {
    Norm attn_norm, ffn_norm;
    backend::MlaWeights attn;
    std::unique_ptr<AbsorbedKvB> absorbed;
    FfnWeights ffn;
  };

  HParams hp_;
  backend::MlaSpec spec_;  // layer and weights set per layer
  float residual_scale_ = 1.0f;
  Tensor tok_embd_, output_, rope_short_, rope_long_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_minicpm3(const gguf::File& file, HParams& hp) {
  return std::make_unique<MiniCpm3>(file, hp);
}

}  // namespace ferrite::model
