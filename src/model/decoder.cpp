#include "model/decoder.h"

#include <algorithm>

#include "core/error.h"
#include "cpu/norm.h"
#include "gguf/metadata.h"
#include "model/pooling.h"

namespace ferrite::model {
namespace {
constexpr uint64_t kMaxPoolingType = 3;  // last; 4 (rank) is not supported
}  // namespace

Decoder::Decoder(const gguf::File& file, HParams& hp, const DecoderOptions& opt) {
  const WeightBinder b(file);
  const int64_t n_embd = hp.n_embd;
  const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
  if (embd == nullptr) throw ModelError(file.path() + ": required tensor token_embd.weight is missing");
  hp.n_vocab = embd->ne[1];
  hp.rope.neox = opt.neox_rope;
  tok_embd_ = b.require("token_embd.weight", {n_embd, hp.n_vocab});
  output_norm_ = b.require_vec("output_norm.weight", n_embd);
  output_ = b.optional("output.weight", {n_embd, hp.n_vocab});
  if (!output_) output_ = tok_embd_;  // tied embeddings
  rope_freqs_ = b.optional_vec("rope_freqs.weight", hp.rope.n_rot / 2);
  // Pooling of embeddings; a kind we do not pool (rank) must not keep the
  // model from generating, so it reads as none here.
  const gguf::Metadata md(file);
  const uint64_t pooling = md.opt_uint(md.arch_key("pooling_type")).value_or(0);
  hp.pooling = pooling <= kMaxPoolingType ? pooling_from_gguf(pooling, file.path()) : Pooling::None;

  const int64_t n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv(), hd = hp.head_dim;
  layers_.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    Layer& L = layers_[static_cast<size_t>(il)];
    auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
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
    L.attn.bo = b.optional_vec(name("attn_output.bias"), n_embd);
    L.ffn_norm = b.require_vec(name("ffn_norm.weight"), n_embd);

    if (file.find_tensor(name("ffn_gate_inp.weight")) != nullptr) {
      if (hp.n_expert == 0) throw ModelError(file.path() + ": expert tensors present but expert_count missing");
      const gguf::TensorInfo& up = file.tensor(name("ffn_up_exps.weight"));
      const int64_t n_ff = up.ne[1];
      L.moe.gate_inp = b.require(name("ffn_gate_inp.weight"), {n_embd, hp.n_expert});
      L.moe.gate_exps = b.require(name("ffn_gate_exps.weight"), {n_embd, n_ff, hp.n_expert});
      L.moe.up_exps = b.require(name("ffn_up_exps.weight"), {n_embd, n_ff, hp.n_expert});
      L.moe.down_exps = b.require(name("ffn_down_exps.weight"), {n_ff, n_embd, hp.n_expert});
      L.moe.norm_weights = opt.moe_norm_weights;
      if (const gguf::TensorInfo* sh = file.find_tensor(name("ffn_up_shexp.weight"))) {
        const int64_t n_ff_sh = sh->ne[1];
        L.moe.shexp.gate = b.require(name("ffn_gate_shexp.weight"), {n_embd, n_ff_sh});
        L.moe.shexp.up = b.require(name("ffn_up_shexp.weight"), {n_embd, n_ff_sh});
        L.moe.shexp.down = b.require(name("ffn_down_shexp.weight"), {n_ff_sh, n_embd});
        L.moe.shexp_gate_inp = b.optional(name("ffn_gate_inp_shexp.weight"), {n_embd});
      }
    } else {
      const gguf::TensorInfo& up = file.tensor(name("ffn_up.weight"));
      const int64_t n_ff = up.ne[1];
      L.ffn.gate = b.require(name("ffn_gate.weight"), {n_embd, n_ff});
      L.ffn.up = b.require(name("ffn_up.weight"), {n_embd, n_ff});
      L.ffn.down = b.require(name("ffn_down.weight"), {n_ff, n_embd});
    }
  }
  hp_ = hp;
}

void Decoder::forward(const ForwardBatch& batch, const KvView& kv, cpu::ThreadPool& pool, Workspace& ws,
                      float* logits) const {
  forward_hidden(batch, kv, pool, ws, logits, nullptr);
}

void Decoder::forward_hidden(const ForwardBatch& batch, const KvView& kv, cpu::ThreadPool& pool, Workspace& ws,
                             float* logits, float* hidden) const {
  Step s{hp_, batch, kv, pool, ws};
  const int64_t n = batch.n_tokens, n_embd = hp_.n_embd;
  float* x = grow(ws.x, n * n_embd);
  float* h = grow(ws.h, n * n_embd);
  float* y = grow(ws.block_out, n * n_embd);
  embed_tokens(s, tok_embd_, x);
  prepare_rope(s, rope_freqs_ ? rope_freqs_.f32() : nullptr);

  for (int64_t il = 0; il < hp_.n_layer; ++il) {
    const Layer& L = layers_[static_cast<size_t>(il)];
    cpu::rms_norm(x, L.attn_norm.f32(), hp_.norm_rms_eps, n, n_embd, h);
    self_attention(s, il, L.attn, h, y);
    add_inplace(x, y, n * n_embd);

    cpu::rms_norm(x, L.ffn_norm.f32(), hp_.norm_rms_eps, n, n_embd, h);
    if (L.moe.gate_inp) {
      mixture_of_experts(s, L.moe, h, y);
    } else {
      feed_forward(s, L.ffn, Activation::Silu, h, n, y);
    }
    add_inplace(x, y, n * n_embd);
  }

  if (batch.n_out == 0) return;
  float* rows = gather_output_rows(s, x);
  cpu::rms_norm(rows, output_norm_.f32(), hp_.norm_rms_eps, batch.n_out, n_embd, rows);  // [n_out, n_embd]
  if (hidden != nullptr) std::copy_n(rows, batch.n_out * n_embd, hidden);
  if (logits != nullptr) linear(s, output_, Tensor{}, rows, batch.n_out, logits);  // [n_out, n_vocab]
}

}  // namespace ferrite::model
