#include "cuda/cpu_front.h"

#include "cpu/norm.h"
#include "model/weights.h"
#include "model/workspace.h"

namespace ferrite::cuda {

CpuFront::CpuFront(const model::Model& m, int64_t n_cpu_layers) : hp_(m.hparams()) {
  const model::WeightBinder b(m.file());
  const int64_t n_embd = hp_.n_embd, n_q = hp_.n_embd_q(), n_kv = hp_.n_embd_kv(), hd = hp_.head_dim;
  tok_embd_ = b.require("token_embd.weight", {n_embd, hp_.n_vocab});
  rope_freqs_ = b.optional_vec("rope_freqs.weight", hp_.rope.n_rot / 2);
  layers_.resize(static_cast<size_t>(n_cpu_layers));
  for (int64_t il = 0; il < n_cpu_layers; ++il) {
    Layer& L = layers_[static_cast<size_t>(il)];
    auto name = [il](const char* s) { return model::WeightBinder::layer_name(il, s); };
    L.attn_norm = b.require_vec(name("attn_norm.weight"), n_embd);
    L.attn.wq = b.require(name("attn_q.weight"), {n_embd, n_q});
    L.attn.wk = b.require(name("attn_k.weight"), {n_embd, n_kv});
    L.attn.wv = b.require(name("attn_v.weight"), {n_embd, n_kv});
    L.attn.bq = b.optional_vec(name("attn_q.bias"), n_q);
    L.attn.bk = b.optional_vec(name("attn_k.bias"), n_kv);
    L.attn.bv = b.optional_vec(name("attn_v.bias"), n_kv);
    L.attn.q_norm = b.optional_vec(name("attn_q_norm.weight"), hd);
    L.attn.k_norm = b.optional_vec(name("attn_k_norm.weight"), hd);
    L.attn.wo = b.require(name("attn_output.weight"), {n_q, n_embd});
    L.ffn_norm = b.require_vec(name("ffn_norm.weight"), n_embd);
    const int64_t n_ff = m.file().tensor(name("ffn_up.weight")).ne[1];
    L.ffn.gate = b.require(name("ffn_gate.weight"), {n_embd, n_ff});
    L.ffn.up = b.require(name("ffn_up.weight"), {n_embd, n_ff});
    L.ffn.down = b.require(name("ffn_down.weight"), {n_ff, n_embd});
  }
}

const float* CpuFront::run(const model::ForwardBatch& batch, const model::KvView& kv, cpu::ThreadPool& pool,
                           model::Workspace& ws) const {
  model::Step s{hp_, batch, kv, pool, ws};
  const int64_t n = batch.n_tokens, n_embd = hp_.n_embd;
  float* x = model::grow(ws.x, n * n_embd);  // [n, n_embd]
  float* h = model::grow(ws.h, n * n_embd);
  float* y = model::grow(ws.block_out, n * n_embd);
  model::embed_tokens(s, tok_embd_, x);
  model::prepare_rope(s, rope_freqs_ ? rope_freqs_.f32() : nullptr);
  for (size_t il = 0; il < layers_.size(); ++il) {
    const Layer& L = layers_[il];
    cpu::rms_norm(x, L.attn_norm.f32(), hp_.norm_rms_eps, n, n_embd, h);
    model::self_attention(s, static_cast<int64_t>(il), L.attn, h, y);
    model::add_inplace(x, y, n * n_embd);
    cpu::rms_norm(x, L.ffn_norm.f32(), hp_.norm_rms_eps, n, n_embd, h);
    model::feed_forward(s, L.ffn, model::Activation::Silu, h, n, y);
    model::add_inplace(x, y, n * n_embd);
  }
  return x;
}

}  // namespace ferrite::cuda
