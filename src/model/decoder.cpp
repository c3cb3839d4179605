#include "model/decoder.h"

#include <algorithm>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/bind_experts.h"
#include "model/bind_layer.h"
#include "model/pooling.h"

namespace ferrite::model {
namespace {
constexpr uint64_t kMaxPoolingType = 3;  // last; 4 (rank) needs a classification head (encoders)
}  // namespace

Decoder::Decoder(const gguf::File& file, HParams& hp, const DecoderOptions& opt) {
  const WeightBinder b(file);
  const int64_t n_embd = hp.n_embd;
  const gguf::TensorInfo* embd = file.find_tensor("token_embd.weight");
  if (embd == nullptr) throw ModelError(file.path() + ": required tensor token_embd.weight is missing");
  hp.n_vocab = embd->ne[1];
  hp.rope.neox = opt.neox_rope;
  tok_embd_ = b.require("token_embd.weight", {n_embd, hp.n_vocab});
  norm_ = opt.layer_norm ? NormKind::Layer : NormKind::Rms;
  ffn_ = opt.ffn_relu_sqr ? FfnKind::ReluSqr : FfnKind::SwiGlu;
  no_rope_step_ = opt.no_rope_layer_step;
  qk_norm_after_rope_ = opt.qk_norm_after_rope;
  if (opt.norm_weights) output_norm_ = b.require_vec("output_norm.weight", n_embd);
  if (opt.layer_norm) output_norm_b_ = b.optional_vec("output_norm.bias", n_embd);
  output_ = bind_output_or_tied(b, hp, tok_embd_);
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
    if (opt.norm_weights) L.attn_norm = b.require_vec(name("attn_norm.weight"), n_embd);
    if (opt.layer_norm) L.attn_norm_b = b.optional_vec(name("attn_norm.bias"), n_embd);
    L.attn = bind_attention(b, hp, il, QkvLayout::Separate);
    L.attn.q_norm = bind_qk_norm(b, name("attn_q_norm.weight"), hd, n_q, opt.qk_norm_whole);
    L.attn.k_norm = bind_qk_norm(b, name("attn_k_norm.weight"), hd, n_kv, opt.qk_norm_whole);
    if (opt.norm_weights) L.ffn_norm = b.require_vec(name("ffn_norm.weight"), n_embd);
    if (opt.layer_norm) L.ffn_norm_b = b.optional_vec(name("ffn_norm.bias"), n_embd);

    if (file.find_tensor(name("ffn_gate_inp.weight")) != nullptr) {
      L.moe = bind_experts(b, hp, il, opt.moe_norm_weights);
      L.moe.probs_bias = b.optional_vec(name("exp_probs_b.bias"), hp.n_expert);  // selection bias (ernie4_5-moe)
      if (const gguf::TensorInfo* sh = file.find_tensor(name("ffn_up_shexp.weight"))) {
        const int64_t n_ff_sh = sh->ne[1];
        L.moe.shexp.gate = b.require(name("ffn_gate_shexp.weight"), {n_embd, n_ff_sh});
        L.moe.shexp.up = b.require(name("ffn_up_shexp.weight"), {n_embd, n_ff_sh});
        L.moe.shexp.down = b.require(name("ffn_down_shexp.weight"), {n_ff_sh, n_embd});
        L.moe.shexp_gate_inp = b.optional(name("ffn_gate_inp_shexp.weight"), {n_embd});
      }
    } else {
      L.ffn = bind_ffn(b, hp, il, opt.ffn_relu_sqr ? FfnGate::None : FfnGate::Required);
    }
  }
  hp_ = hp;
  desc_.tok_embd = &tok_embd_;
  desc_.output_norm = &output_norm_;
  desc_.output = &output_;
  desc_.rope = rope_config(hp_.rope, rope_freqs_ ? rope_freqs_.f32() : nullptr);
  for (const Layer& L : layers_) {
    desc_.layers.push_back({&L.attn_norm, &L.attn, &L.ffn_norm, L.moe.gate_inp ? nullptr : &L.ffn,
                            L.moe.gate_inp ? &L.moe : nullptr});
  }
}

void Decoder::forward(Step& s, float* logits) const { forward_hidden(s, logits, nullptr); }

void Decoder::forward_hidden(Step& s, float* logits, float* hidden) const {
  const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
  const int rope = s.prepare_rope(rope_config(hp_.rope, rope_freqs_ ? rope_freqs_.f32() : nullptr));
  Act x = s.ops().buffer(Buf::X, n, n_embd);
  s.ops().embed(tok_embd_, Ids::Tokens, x);

  for (int64_t il = 0; il < hp_.n_layer; ++il) {
    s.enter_layer(il, x);
    backend::Ops& o = s.ops();
    const Layer& L = layers_[static_cast<size_t>(il)];
    const Act h = o.buffer(Buf::H, n, n_embd);
    o.norm(norm_, x, Norm{L.attn_norm, L.attn_norm_b}, h, qkv_input(L.attn));
    const bool no_rope = no_rope_step_ > 0 && (il + 1) % no_rope_step_ == 0;
    backend::AttentionSpec a = attention_spec(hp_, il, L.attn, no_rope ? backend::kNoRope : rope);
    a.qk_norm_after_rope = qk_norm_after_rope_;
    o.attention(a, h, x, /*accumulate=*/true);

    if (L.moe.gate_inp) {
      o.norm(norm_, x, Norm{L.ffn_norm, L.ffn_norm_b}, h, &L.moe.gate_exps);
      o.moe(L.moe, h, x, true);
    } else {
      o.norm(norm_, x, Norm{L.ffn_norm, L.ffn_norm_b}, h, ffn_input(L.ffn));
      o.feed_forward({&L.ffn, ffn_}, h, x, true);
    }
  }
  output_head(s, hp_, norm_, Norm{output_norm_, output_norm_b_}, output_, Tensor{}, x, logits, hidden);
}

}  // namespace ferrite::model
