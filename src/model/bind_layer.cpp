#include "model/bind_layer.h"

namespace ferrite::model {

AttentionWeights bind_attention(const WeightBinder& b, const HParams& hp, int64_t il, QkvLayout layout) {
  const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
  auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
  AttentionWeights w;
  const bool fused = layout == QkvLayout::Fused ||
                     (layout == QkvLayout::Either && b.file().find_tensor(name("attn_qkv.weight")) != nullptr);
  if (fused) {
    w.wqkv = b.require(name("attn_qkv.weight"), {n_embd, n_q + 2 * n_kv});
    w.bqkv = b.optional_vec(name("attn_qkv.bias"), n_q + 2 * n_kv);
  } else {
    w.wq = b.require(name("attn_q.weight"), {n_embd, n_q});
    w.wk = b.require(name("attn_k.weight"), {n_embd, n_kv});
    w.wv = b.require(name("attn_v.weight"), {n_embd, n_kv});
    w.bq = b.optional_vec(name("attn_q.bias"), n_q);
    w.bk = b.optional_vec(name("attn_k.bias"), n_kv);
    w.bv = b.optional_vec(name("attn_v.bias"), n_kv);
  }
  w.wo = b.require(name("attn_output.weight"), {n_q, n_embd});
  w.bo = b.optional_vec(name("attn_output.bias"), n_embd);
  return w;
}

FfnWeights bind_ffn(const WeightBinder& b, const HParams& hp, int64_t il, FfnGate gate) {
  const int64_t n_embd = hp.n_embd;
  auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
  const int64_t n_ff = b.file().tensor(name("ffn_up.weight")).ne[1];
  FfnWeights f;
  if (gate != FfnGate::None) {
    f.gate = gate == FfnGate::Required ? b.require(name("ffn_gate.weight"), {n_embd, n_ff})
                                       : b.optional(name("ffn_gate.weight"), {n_embd, n_ff});
    f.gate_b = b.optional_vec(name("ffn_gate.bias"), n_ff);
  }
  f.up = b.require(name("ffn_up.weight"), {n_embd, n_ff});
  f.up_b = b.optional_vec(name("ffn_up.bias"), n_ff);
  f.down = b.require(name("ffn_down.weight"), {n_ff, n_embd});
  f.down_b = b.optional_vec(name("ffn_down.bias"), n_embd);
  return f;
}

Tensor bind_output_or_tied(const WeightBinder& b, const HParams& hp, const Tensor& tok_embd) {
  const Tensor out = b.optional("output.weight", {hp.n_embd, hp.n_vocab});
  return out ? out : tok_embd;
}

}  // namespace ferrite::model
