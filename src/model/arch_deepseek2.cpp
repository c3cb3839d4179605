// deepseek2 (DeepSeek-V2, V2-Lite, V2.5, V3, R1; Kimi-K2 in this layout):
// multi-head latent attention (backend::MlaWeights, in its absorbed form:
// the cache holds the latent, kv_lora_rank + rope values per token and
// layer) and, after `leading_dense_block_count` dense layers, routed experts
// plus shared experts. Facts from llama.cpp c392e50 (llama-model.cpp,
// build_deepseek2):
// - keys: attention.q_lora_rank (absent: one attn_q projection, V2-Lite),
//   attention.kv_lora_rank, attention.key_length = nope + rope,
//   attention.value_length, rope.dimension_count = rope,
//   expert_feed_forward_length, expert_shared_count, expert_weights_scale
//   (applied), expert_weights_norm (default false), expert_gating_func
//   (1 softmax, 2 sigmoid; 0 or absent: softmax), the V3 selection bias
//   blk.N.exp_probs_b.bias, rope.scaling.yarn_log_multiplier;
// - adjacent-pair RoPE on q_pe and k_pe, with YaRN's magnitude undone in
//   the rotation (attn_factor 1 / (1 + 0.1 ln(1/freq_scale))) and moved
//   into the score scale: mscale = attn_factor (1 + yarn_log_multiplier
//   ln(1/freq_scale)), scale = mscale^2 / sqrt(nope + rope).
// c392e50 picks the V2-Lite form by block_count == 27; here the tensors
// decide (attn_q.weight present), which agrees on every published file.
#include <cmath>
#include <memory>
#include <vector>

#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/blocks.h"
#include "model/mla_absorb.h"

namespace ferrite::model {
namespace {

class DeepSeek2 : public Architecture {
 public:
  DeepSeek2(const gguf::File& file, HParams& hp);
  void forward(Step& s, float* logits) const override;

 private:
  struct Layer {
    Tensor attn_norm;
    backend::MlaWeights attn;
    std::unique_ptr<AbsorbedKvB> absorbed;
    Tensor ffn_norm;
    FfnWeights ffn;
    MoeWeights moe;
  };
  HParams hp_;
  backend::MlaSpec spec_;  // layer and weights set per layer
  Tensor tok_embd_, output_norm_, output_;
  std::vector<Layer> layers_;
};

DeepSeek2::DeepSeek2(const gguf::File& file, HParams& hp) {
  const gguf::Metadata md(file);
  auto key = [&](const char* s) { return md.arch_key(s); };
  const std::string& path = file.path();
  const int64_t n_embd = hp.n_embd, H = hp.n_head;
  const int64_t n_dense = static_cast<int64_t>(md.get_uint(key("leading_dense_block_count")));
  const int64_t kv_lora = static_cast<int64_t>(md.get_uint(key("attention.kv_lora_rank")));
  const int64_t rope = hp.rope.n_rot;
  const int64_t qk = hp.head_dim;  // key_length
  const int64_t nope = qk - rope;
  const int64_t v_dim = static_cast<int64_t>(md.opt_uint(key("attention.value_length")).value_or(static_cast<uint64_t>(qk)));
  const int64_t n_ff_exp = static_cast<int64_t>(md.get_uint(key("expert_feed_forward_length")));
  const int64_t n_shared = static_cast<int64_t>(md.get_uint(key("expert_shared_count")));
  if (n_dense < 0 || n_dense > hp.n_layer || kv_lora <= 0 || kv_lora > (1 << 16) || nope <= 0 || v_dim <= 0 ||
      v_dim > (1 << 16) || n_ff_exp <= 0 || n_shared < 0 || hp.n_head_kv != hp.n_head) {
    throw ModelError(path + ": inconsistent deepseek2 sizes (leading dense " + std::to_string(n_dense) +
                     ", kv_lora_rank " + std::to_string(kv_lora) + ", key " + std::to_string(qk) + " = nope + rope " +
                     std::to_string(rope) + ", value " + std::to_string(v_dim) + ", head_count_kv " +
                     std::to_string(hp.n_head_kv) + " vs " + std::to_string(H) + ")");
  }
  const uint64_t gating = md.opt_uint(key("expert_gating_func")).value_or(0);
  if (gating > 2) throw ModelError(path + ": unknown expert_gating_func " + std::to_string(gating));
  const float w_scale = md.get_float(key("expert_weights_scale"));
  const bool w_norm = md.opt_bool(key("expert_weights_norm")).value_or(false);
  const float log_mul = md.opt_float(key("rope.scaling.yarn_log_multiplier")).value_or(0.0f);

  // RoPE and the score scale (see the file comment).
  hp.rope.neox = false;
  const float ln_inv_fs = std::log(1.0f / hp.rope.freq_scale);
  const float mscale = hp.rope.yarn_attn_factor * (1.0f + log_mul * ln_inv_fs);
  hp.rope.yarn_attn_factor = 1.0f / (1.0f + 0.1f * ln_inv_fs);
  spec_.scale = mscale * mscale / std::sqrt(static_cast<float>(qk));
  spec_.n_head = H;
  spec_.nope = nope;
  spec_.n_rot = rope;
  spec_.kv_lora = kv_lora;
  spec_.v_dim = v_dim;
  // The cache: one latent row per token and layer (ops.h MlaSpec).
  hp.n_head_kv = 1;
  hp.head_dim = rope + kv_lora;

  const WeightBinder b(file);
  tok_embd_ = bind_token_embd(b, hp);
  output_norm_ = b.require_vec("output_norm.weight", n_embd);
  output_ = b.require("output.weight", {n_embd, hp.n_vocab});
  layers_.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    Layer& L = layers_[static_cast<size_t>(il)];
    auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
    L.attn_norm = b.require_vec(name("attn_norm.weight"), n_embd);
    const bool low_rank_q = file.find_tensor(name("attn_q.weight")) == nullptr;
    MlaLayer mla = bind_mla_layer(b, il, n_embd, spec_,
                                  low_rank_q ? static_cast<int64_t>(md.get_uint(key("attention.q_lora_rank"))) : 0);
    L.attn = mla.w;
    L.absorbed = std::move(mla.absorbed);
    L.ffn_norm = b.require_vec(name("ffn_norm.weight"), n_embd);
    if (il < n_dense) {
      const int64_t n_ff = file.tensor(name("ffn_up.weight")).ne[1];
      L.ffn.gate = b.require(name("ffn_gate.weight"), {n_embd, n_ff});
      L.ffn.up = b.require(name("ffn_up.weight"), {n_embd, n_ff});
      L.ffn.down = b.require(name("ffn_down.weight"), {n_ff, n_embd});
      continue;
    }
    if (hp.n_expert == 0) throw ModelError(path + ": expert layers but no expert_count");
    MoeWeights& m = L.moe;
    m.gate_inp = b.require(name("ffn_gate_inp.weight"), {n_embd, hp.n_expert});
    m.gate_exps = b.require(name("ffn_gate_exps.weight"), {n_embd, n_ff_exp, hp.n_expert});
    m.up_exps = b.require(name("ffn_up_exps.weight"), {n_embd, n_ff_exp, hp.n_expert});
    m.down_exps = b.require(name("ffn_down_exps.weight"), {n_ff_exp, n_embd, hp.n_expert});
    m.probs_bias = b.optional_vec(name("exp_probs_b.bias"), hp.n_expert);
    m.norm_weights = w_norm;
    m.gating = gating == 2 ? backend::MoeGating::Sigmoid : backend::MoeGating::Softmax;
    m.weights_scale = w_scale;
    if (n_shared > 0) {
      const int64_t n_sh = n_ff_exp * n_shared;
      m.shexp.gate = b.require(name("ffn_gate_shexp.weight"), {n_embd, n_sh});
      m.shexp.up = b.require(name("ffn_up_shexp.weight"), {n_embd, n_sh});
      m.shexp.down = b.require(name("ffn_down_shexp.weight"), {n_sh, n_embd});
    }
  }
  hp_ = hp;
}

void DeepSeek2::forward(Step& s, float* logits) const {
  const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
  const int rope = s.prepare_rope(rope_config(hp_.rope, nullptr));
  Act x = s.ops().buffer(Buf::X, n, n_embd);
  s.ops().embed(tok_embd_, Ids::Tokens, x);
  for (int64_t il = 0; il < hp_.n_layer; ++il) {
    s.enter_layer(il, x);
    backend::Ops& o = s.ops();
    const Layer& L = layers_[static_cast<size_t>(il)];
    const Act h = o.buffer(Buf::H, n, n_embd);
    o.norm(NormKind::Rms, x, Norm{L.attn_norm, {}}, h, L.attn.wq ? &L.attn.wq : &L.attn.wq_a);
    backend::MlaSpec spec = spec_;
    spec.layer = il;
    spec.w = &L.attn;
    spec.rope = rope;
    o.mla_attention(spec, h, x, /*accumulate=*/true);
    if (L.moe.gate_inp) {
      o.norm(NormKind::Rms, x, Norm{L.ffn_norm, {}}, h, &L.moe.gate_exps);
      o.moe(L.moe, h, x, true);
    } else {
      o.norm(NormKind::Rms, x, Norm{L.ffn_norm, {}}, h, ffn_input(L.ffn));
      o.feed_forward({&L.ffn, FfnKind::SwiGlu}, h, x, true);
    }
  }
  output_head(s, hp_, NormKind::Rms, Norm{output_norm_, {}}, output_, Tensor{}, x, logits);
}

}  // namespace

std::unique_ptr<Architecture> make_deepseek2(const gguf::File& file, HParams& hp) {
  return std::make_unique<DeepSeek2>(file, hp);
}

}  // namespace ferrite::model
