// falcon: attention and MLP in parallel from one LayerNorm of the input
// (Falcon-40B-style files add attn_norm_2, which then feeds the attention),
// a fused QKV projection without bias (multi-query attention), NeoX RoPE,
// a GELU MLP without biases:
//   x += attn(ln_a(x)) + mlp(ln(x))
#include <vector>

#include "model/arch_factories.h"
#include "model/blocks_extra.h"

namespace ferrite::model {
namespace {

class Falcon : public Architecture {
 public:
  Falcon(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
    hp.rope.neox = true;
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = b.optional("output.weight", {n_embd, hp.n_vocab});
    if (!output_) output_ = tok_embd_;

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      if (file.find_tensor(name("attn_norm_2.weight")) != nullptr) {
        L.attn_norm_2 = bind_norm(b, name("attn_norm_2"), n_embd);
      }
      L.attn.wqkv = b.require(name("attn_qkv.weight"), {n_embd, n_q + 2 * n_kv});
      L.attn.wo = b.require(name("attn_output.weight"), {n_q, n_embd});
      const int64_t n_ff = file.tensor(name("ffn_up.weight")).ne[1];
      L.ffn.up = b.require(name("ffn_up.weight"), {n_embd, n_ff});
      L.ffn.down = b.require(name("ffn_down.weight"), {n_ff, n_embd});
    }
    hp_ = hp;
  }

  void forward(const ForwardBatch& batch, const KvView& kv, cpu::ThreadPool& pool, Workspace& ws,
               float* logits) const override {
    Step s{hp_, batch, kv, pool, ws};
    const int64_t n = batch.n_tokens, n_embd = hp_.n_embd;
    float* x = grow(ws.x, n * n_embd);
    float* h = grow(ws.h, n * n_embd);
    float* y = grow(ws.block_out, n * n_embd);
    float* f = grow(ws.ffn_out, n * n_embd);
    embed_tokens(s, tok_embd_, x);
    prepare_rope(s, nullptr);

    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      const Layer& L = layers_[static_cast<size_t>(il)];
      apply_norm(NormKind::Layer, hp_, L.attn_norm, x, n, n_embd, h);
      if (L.attn_norm_2.w) {
        float* h2 = grow(ws.ffn_a, n * n_embd);
        apply_norm(NormKind::Layer, hp_, L.attn_norm_2, x, n, n_embd, h2);
        self_attention(s, il, L.attn, h2, y);
      } else {
        self_attention(s, il, L.attn, h, y);
      }
      feed_forward_gelu(s, L.ffn, h, n, f);
      add_inplace(f, y, n * n_embd);  // mlp + attn, then the residual
      add_inplace(x, f, n * n_embd);
    }
    output_head(s, NormKind::Layer, output_norm_, output_, Tensor{}, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, attn_norm_2;
    AttentionWeights attn;
    FfnWeights ffn;
  };

  HParams hp_;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_falcon(const gguf::File& file, HParams& hp) {
  return std::make_unique<Falcon>(file, hp);
}

}  // namespace ferrite::model
