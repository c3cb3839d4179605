// gemma, gemma2 and gemma3. All three scale the embeddings by sqrt(n_embd),
// use NeoX RoPE, a GELU-gated feed-forward and tie the output to the
// embeddings. GGUF stores their RMSNorm weights as (1 + w) already (the
// converter adds the one), so the norms are plain RMSNorms here.
//   gemma2: post-attention and post-FFN norms, attention and final logit
//           soft-capping, sliding-window attention on even layers.
//   gemma3: the post-norms, per-head Q/K RMSNorm, five sliding layers to one
//           global; sliding layers use RoPE base 10000 without scaling.
//           A file without attention.sliding_window has only global layers.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "model/arch_factories.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

// Layer counts of the largest sizes, whose queries are scaled by
// 1/sqrt(n_embd / n_head) instead of 1/sqrt(head_dim) (query_pre_attn_scalar).
constexpr int64_t kGemma2LargeLayers = 46;
constexpr int64_t kGemma3LargeLayers = 62;

class Gemma : public Architecture {
 public:
  Gemma(const gguf::File& file, HParams& hp, int version) : version_(version) {
    const WeightBinder b(file);
    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv(), hd = hp.head_dim;
    hp.rope.neox = true;
    if (version == 1) {
      hp.n_swa = 0;
      hp.attn_softcap = hp.final_softcap = 0.0f;
    }
    if (version == 2 && hp.n_swa <= 0) {
      throw ModelError(file.path() + ": " + hp.arch + " needs attention.sliding_window");
    }
    // gemma3 caps no attention logits; without a sliding window (absent or
    // 0) every layer attends globally with the global RoPE, as llama.cpp.
    if (version == 3) hp.attn_softcap = 0.0f;
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = b.optional("output.weight", {n_embd, hp.n_vocab});
    if (!output_) output_ = tok_embd_;
    const int64_t large = version == 2 ? kGemma2LargeLayers : kGemma3LargeLayers;
    if (version >= 2 && hp.n_layer == large) attn_scale_ = 1.0f / std::sqrt(static_cast<float>(n_embd / hp.n_head));

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn.wq = b.require(name("attn_q.weight"), {n_embd, n_q});
      L.attn.wk = b.require(name("attn_k.weight"), {n_embd, n_kv});
      L.attn.wv = b.require(name("attn_v.weight"), {n_embd, n_kv});
      L.attn.wo = b.require(name("attn_output.weight"), {n_q, n_embd});
      L.ffn_norm = bind_norm(b, name("ffn_norm"), n_embd);
      const int64_t n_ff = file.tensor(name("ffn_up.weight")).ne[1];
      L.ffn.gate = b.require(name("ffn_gate.weight"), {n_embd, n_ff});
      L.ffn.up = b.require(name("ffn_up.weight"), {n_embd, n_ff});
      L.ffn.down = b.require(name("ffn_down.weight"), {n_ff, n_embd});
      if (version >= 2) {
        L.post_attn_norm = bind_norm(b, name("post_attention_norm"), n_embd);
        L.post_ffn_norm = bind_norm(b, name("post_ffw_norm"), n_embd);
      }
      if (version == 2) L.sliding = il % 2 == 0;
      if (version == 3) {
        L.attn.q_norm = b.require_vec(name("attn_q_norm.weight"), hd);
        L.attn.k_norm = b.require_vec(name("attn_k_norm.weight"), hd);
        L.sliding = hp.n_swa > 0 && (il + 1) % kGemma3SlidingPattern != 0;
      }
      hp.swa_layers.push_back(L.sliding);
    }
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    // gemma3's sliding layers rotate with other frequencies (a second table).
    const int rope_global = s.prepare_rope(rope_config(hp_.rope, nullptr));
    int rope_local = rope_global;
    if (version_ == 3 && hp_.n_swa > 0) {
      rope_local = s.prepare_rope(rope_config(gemma3_local_rope(hp_.rope), nullptr));
    }
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    s.ops().scale(x, std::sqrt(static_cast<float>(n_embd)));

    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      const Act y = o.buffer(Buf::Y, n, n_embd);
      backend::AttentionSpec a = attention_spec(hp_, il, L.attn, version_ == 3 && L.sliding ? rope_local : rope_global,
                                                L.sliding);
      a.scale = attn_scale_;
      o.norm(NormKind::Rms, x, L.attn_norm, h, qkv_input(L.attn));
      if (version_ >= 2) {
        o.attention(a, h, y);
        o.norm(NormKind::Rms, y, L.post_attn_norm, y);
        o.add(x, y);
      } else {
        o.attention(a, h, x, /*accumulate=*/true);
      }

      o.norm(NormKind::Rms, x, L.ffn_norm, h, ffn_input(L.ffn));
      if (version_ >= 2) {
        o.feed_forward({&L.ffn, FfnKind::GeluF16}, h, y);
        o.norm(NormKind::Rms, y, L.post_ffn_norm, y);
        o.add(x, y);
      } else {
        o.feed_forward({&L.ffn, FfnKind::GeluF16}, h, x, true);
      }
    }
    output_head(s, hp_, NormKind::Rms, output_norm_, output_, Tensor{}, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, post_attn_norm, ffn_norm, post_ffn_norm;
    AttentionWeights attn;
    FfnWeights ffn;
    bool sliding = false;
  };

  int version_;
  HParams hp_;
  float attn_scale_ = 0.0f;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_gemma(const gguf::File& file, HParams& hp) {
  return std::make_unique<Gemma>(file, hp, 1);
}

std::unique_ptr<Architecture> make_gemma2(const gguf::File& file, HParams& hp) {
  return std::make_unique<Gemma>(file, hp, 2);
}

std::unique_ptr<Architecture> make_gemma3(const gguf::File& file, HParams& hp) {
  return std::make_unique<Gemma>(file, hp, 3);
}

}  // namespace ferrite::model
