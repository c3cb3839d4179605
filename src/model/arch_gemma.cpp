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
#include "model/blocks_extra.h"
#include "model/layer_rope.h"

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
    }
    hp_ = hp;
  }

  void forward(const ForwardBatch& batch, const KvView& kv, cpu::ThreadPool& pool, Workspace& ws,
               float* logits) const override {
    Step s{hp_, batch, kv, pool, ws};
    s.attn_scale = attn_scale_;
    const int64_t n = batch.n_tokens, n_embd = hp_.n_embd;
    float* x = grow(ws.x, n * n_embd);
    float* h = grow(ws.h, n * n_embd);
    float* y = grow(ws.block_out, n * n_embd);
    embed_tokens(s, tok_embd_, x);
    scale_inplace(x, n * n_embd, std::sqrt(static_cast<float>(n_embd)));

    // gemma3's sliding layers rotate with other frequencies: the table is
    // recomputed whenever consecutive layers differ.
    int rope_kind = -1;  // 0: global, 1: local
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      const Layer& L = layers_[static_cast<size_t>(il)];
      const int want = version_ == 3 && L.sliding ? 1 : 0;
      if (want != rope_kind) {
        prepare_layer_rope(s, want == 1);
        rope_kind = want;
      }
      apply_norm(NormKind::Rms, hp_, L.attn_norm, x, n, n_embd, h);
      self_attention(s, il, L.attn, h, y, L.sliding);
      if (version_ >= 2) apply_norm(NormKind::Rms, hp_, L.post_attn_norm, y, n, n_embd, y);
      add_inplace(x, y, n * n_embd);

      apply_norm(NormKind::Rms, hp_, L.ffn_norm, x, n, n_embd, h);
      feed_forward_gelu(s, L.ffn, h, n, y);
      if (version_ >= 2) apply_norm(NormKind::Rms, hp_, L.post_ffn_norm, y, n, n_embd, y);
      add_inplace(x, y, n * n_embd);
    }
    output_head(s, NormKind::Rms, output_norm_, output_, Tensor{}, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, post_attn_norm, ffn_norm, post_ffn_norm;
    AttentionWeights attn;
    FfnWeights ffn;
    bool sliding = false;
  };

  void prepare_layer_rope(Step& s, bool local) const {
    if (!local) {
      prepare_rope(s, nullptr);
      return;
    }
    HParams local_hp = hp_;
    local_hp.rope.freq_base = kGemma3LocalRopeBase;
    local_hp.rope.freq_scale = 1.0f;
    local_hp.rope.yarn_ext_factor = 0.0f;
    Step ls{local_hp, s.batch, s.kv, s.pool, s.ws};
    prepare_rope(ls, nullptr);
    s.rope = ls.rope;
  }

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
