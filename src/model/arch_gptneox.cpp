// gptneox (Pythia, GPT-NeoX): LayerNorm with biases, a fused QKV projection
// with bias, NeoX RoPE over only the first rope.dimension_count dimensions of
// each head, a GELU MLP with biases, and (use_parallel_residual, the default)
// attention and MLP computed side by side from the same input:
//   parallel:   x += attn(ln1(x)) + mlp(ln2(x))
//   sequential: x += attn(ln1(x)); x += mlp(ln2(x))
#include <vector>

#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/blocks_extra.h"

namespace ferrite::model {
namespace {

class GptNeoX : public Architecture {
 public:
  GptNeoX(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
    hp.rope.neox = true;
    parallel_ = md.opt_bool(md.arch_key("use_parallel_residual")).value_or(true);
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = b.optional("output.weight", {n_embd, hp.n_vocab});
    if (!output_) output_ = tok_embd_;

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
      L.attn.wqkv = b.require(name("attn_qkv.weight"), {n_embd, n_q + 2 * n_kv});
      L.attn.bqkv = b.optional_vec(name("attn_qkv.bias"), n_q + 2 * n_kv);
      L.attn.wo = b.require(name("attn_output.weight"), {n_q, n_embd});
      L.attn.bo = b.optional_vec(name("attn_output.bias"), n_embd);
      L.ffn_norm = bind_norm(b, name("ffn_norm"), n_embd);
      const int64_t n_ff = file.tensor(name("ffn_up.weight")).ne[1];
      L.ffn.up = b.require(name("ffn_up.weight"), {n_embd, n_ff});
      L.ffn.up_b = b.optional_vec(name("ffn_up.bias"), n_ff);
      L.ffn.down = b.require(name("ffn_down.weight"), {n_ff, n_embd});
      L.ffn.down_b = b.optional_vec(name("ffn_down.bias"), n_embd);
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
      self_attention(s, il, L.attn, h, y);
      if (parallel_) {
        apply_norm(NormKind::Layer, hp_, L.ffn_norm, x, n, n_embd, h);
        feed_forward_gelu(s, L.ffn, h, n, f);
        add_inplace(f, y, n * n_embd);  // mlp + attn, then the residual
        add_inplace(x, f, n * n_embd);
      } else {
        add_inplace(x, y, n * n_embd);
        apply_norm(NormKind::Layer, hp_, L.ffn_norm, x, n, n_embd, h);
        feed_forward_gelu(s, L.ffn, h, n, f);
        add_inplace(x, f, n * n_embd);
      }
    }
    output_head(s, NormKind::Layer, output_norm_, output_, Tensor{}, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, ffn_norm;
    AttentionWeights attn;
    FfnWeights ffn;
  };

  HParams hp_;
  bool parallel_ = true;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_gptneox(const gguf::File& file, HParams& hp) {
  return std::make_unique<GptNeoX>(file, hp);
}

}  // namespace ferrite::model
