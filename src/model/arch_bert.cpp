// bert: an encoder. Embeddings = token + token type 0 + learned position,
// LayerNorm'ed; post-LayerNorm blocks with biases everywhere and
// bidirectional attention within each sequence of the batch (no KV cache):
//   x = ln(x + attn(x)); x = ln(x + mlp(x))      (GELU MLP)
// The output rows are the final hidden states [n_out, n_embd]; the runtime
// pools them per sequence as <arch>.pooling_type says (model/pooling.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "cpu/activations.h"
#include "cpu/vec_ops.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/blocks_extra.h"
#include "model/pooling.h"

namespace ferrite::model {
namespace {

class Bert : public Architecture {
 public:
  Bert(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
    if (n_q != n_embd || n_kv != n_embd) throw ModelError(file.path() + ": bert needs n_head * head_dim == n_embd");
    hp.pooling = pooling_from_gguf(md.opt_uint(md.arch_key("pooling_type")).value_or(0), file.path());
    tok_embd_ = bind_token_embd(b, hp);
    const gguf::TensorInfo& types = file.tensor("token_types.weight");
    type_embd_ = b.require("token_types.weight", {n_embd, types.ne[1]});
    const gguf::TensorInfo& pos = file.tensor("position_embd.weight");
    pos_embd_ = b.require("position_embd.weight", {n_embd, pos.ne[1]});
    embd_norm_ = bind_norm(b, "token_embd_norm", n_embd);

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      L.wq = b.require(name("attn_q.weight"), {n_embd, n_embd});
      L.bq = b.optional_vec(name("attn_q.bias"), n_embd);
      L.wk = b.require(name("attn_k.weight"), {n_embd, n_embd});
      L.bk = b.optional_vec(name("attn_k.bias"), n_embd);
      L.wv = b.require(name("attn_v.weight"), {n_embd, n_embd});
      L.bv = b.optional_vec(name("attn_v.bias"), n_embd);
      L.wo = b.require(name("attn_output.weight"), {n_embd, n_embd});
      L.bo = b.optional_vec(name("attn_output.bias"), n_embd);
      L.attn_out_norm = bind_norm(b, name("attn_output_norm"), n_embd);
      const int64_t n_ff = file.tensor(name("ffn_up.weight")).ne[1];
      L.ffn.up = b.require(name("ffn_up.weight"), {n_embd, n_ff});
      L.ffn.up_b = b.optional_vec(name("ffn_up.bias"), n_ff);
      L.ffn.down = b.require(name("ffn_down.weight"), {n_ff, n_embd});
      L.ffn.down_b = b.optional_vec(name("ffn_down.bias"), n_embd);
      L.out_norm = bind_norm(b, name("layer_output_norm"), n_embd);
    }
    hp_ = hp;
  }

  bool is_encoder() const override { return true; }

  void forward(const ForwardBatch& batch, const KvView& kv, cpu::ThreadPool& pool, Workspace& ws,
               float* states) const override {
    Step s{hp_, batch, kv, pool, ws};
    const int64_t n = batch.n_tokens, n_embd = hp_.n_embd;
    float* x = grow(ws.x, n * n_embd);
    float* y = grow(ws.block_out, n * n_embd);
    embed_tokens(s, tok_embd_, x);
    // Every token has type 0: its row, looked up like a token.
    const int32_t type_id = 0;
    const ForwardBatch type_batch{&type_id, nullptr, 1, nullptr, 0};
    Step type_step{hp_, type_batch, kv, pool, ws};
    float* type0 = grow(ws.router, n_embd);
    embed_tokens(type_step, type_embd_, type0);
    for (int64_t t = 0; t < n; ++t) add_inplace(x + t * n_embd, type0, n_embd);
    add_position_embeddings(s, pos_embd_, x);
    apply_norm(NormKind::Layer, hp_, embd_norm_, x, n, n_embd, x);

    for (const Layer& L : layers_) {
      attention(s, L, x, y);
      add_inplace(x, y, n * n_embd);
      apply_norm(NormKind::Layer, hp_, L.attn_out_norm, x, n, n_embd, x);
      feed_forward_gelu(s, L.ffn, x, n, y);
      add_inplace(x, y, n * n_embd);
      apply_norm(NormKind::Layer, hp_, L.out_norm, x, n, n_embd, x);
    }
    for (int64_t i = 0; i < batch.n_out; ++i) {
      const float* row = x + static_cast<int64_t>(batch.out_rows[i]) * n_embd;
      std::copy_n(row, n_embd, states + i * n_embd);
    }
  }

 private:
  struct Layer {
    Tensor wq, bq, wk, bk, wv, bv, wo, bo;
    Norm attn_out_norm, out_norm;
    FfnWeights ffn;
  };

  // out [n, n_embd] = wo · softmax(q k^T / sqrt(hd)) v + bo, each token
  // attending to every token of its sequence, in f32.
  void attention(Step& s, const Layer& L, const float* x, float* out) const {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd, n_head = hp_.n_head, hd = hp_.head_dim;
    float* q = grow(s.ws.q, n * n_embd);
    float* k = grow(s.ws.k, n * n_embd);
    float* v = grow(s.ws.v, n * n_embd);
    float* a = grow(s.ws.attn, n * n_embd);
    linear(s, L.wq, L.bq, x, n, q);
    linear(s, L.wk, L.bk, x, n, k);
    linear(s, L.wv, L.bv, x, n, v);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const int32_t* seq = s.batch.seq;
    const cpu::VecOps& ops = cpu::vec_ops();
    if (s.ws.attention.scores.size() < static_cast<size_t>(s.pool.size())) {
      s.ws.attention.scores.resize(static_cast<size_t>(s.pool.size()));
    }
    s.pool.run([&](int ith, int nth) {
      std::vector<float>& p = s.ws.attention.scores[static_cast<size_t>(ith)];
      if (p.size() < static_cast<size_t>(n)) p.resize(static_cast<size_t>(n));
      const cpu::Range work = cpu::split_range(n * n_head, ith, nth);
      for (int64_t w = work.begin; w < work.end; ++w) {
        const int64_t t = w / n_head, h = w % n_head;
        const float* qt = q + t * n_embd + h * hd;
        for (int64_t u = 0; u < n; ++u) {
          const bool visible = seq == nullptr || seq[u] == seq[t];
          p[static_cast<size_t>(u)] = visible ? ops.dot_f32(qt, k + u * n_embd + h * hd, hd) * scale : -INFINITY;
        }
        cpu::softmax_inplace(p.data(), n);
        float* at = a + t * n_embd + h * hd;
        std::fill_n(at, hd, 0.0f);
        for (int64_t u = 0; u < n; ++u) {
          const float pu = p[static_cast<size_t>(u)];
          if (pu == 0.0f) continue;
          const float* vu = v + u * n_embd + h * hd;
          for (int64_t d = 0; d < hd; ++d) at[d] += pu * vu[d];
        }
      }
    });
    linear(s, L.wo, L.bo, a, n, out);
  }

  HParams hp_;
  Tensor tok_embd_, type_embd_, pos_embd_;
  Norm embd_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_bert(const gguf::File& file, HParams& hp) {
  return std::make_unique<Bert>(file, hp);
}

}  // namespace ferrite::model
