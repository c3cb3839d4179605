// glm4 (Glm4ForCausalLM: GLM-4-0414) and glm4moe (Glm4MoeForCausalLM:
// GLM-4.5, GLM-4.5-Air, GLM-4.6), with the keys and names llama.cpp's
// converter writes. RoPE turns head_dim x partial_rotary_factor dimensions
// (0.5 when absent), pairs as stored (no reordering).
// glm4: norms before and after both blocks (post_self_attn_layernorm ->
//   post_attention_norm, post_attention_layernorm -> ffn_norm,
//   post_mlp_layernorm -> post_ffw_norm), the fused mlp.gate_up_proj as
//   ffn_up (gate | up).
// glm4moe: the feed-forward's norm is post_attention_layernorm ->
//   post_attention_norm; first_k_dense_replace dense layers, then sigmoid-
//   routed experts with the selection bias (gate.e_score_correction_bias ->
//   exp_probs_b.bias), renormalised (norm_topk_prob) and scaled
//   (routed_scaling_factor), plus shared experts. The multi-token-prediction
//   layers past num_hidden_layers are left out (ferrite does not run them;
//   nextn_predict_layers is not written).
#include <string>

#include "convert/arch.h"
#include "convert/decoder_rules.h"

namespace ferrite::convert {
namespace {

void rope_dims(Params& p) {
  double partial = p.opt_float({"partial_rotary_factor"}).value_or(0.5);
  if (const Json* rp = json_object(p.files().config, "rope_parameters", p.config_path())) {
    partial = json_number(*rp, "partial_rotary_factor", p.config_path()).value_or(partial);
  }
  p.u32("rope.dimension_count", static_cast<int64_t>(static_cast<double>(p.dims.head_dim) * partial));
}

void glm4_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  rope_dims(p);
}

void glm4moe_params(Params& p) {
  decoder_dims(p);
  Dims& d = p.dims;
  d.experts = p.req_int({"n_routed_experts"});
  base_params(p);
  rope_dims(p);
  p.u32("expert_count", d.experts);
  p.u32("expert_used_count", p.req_int({"num_experts_per_tok"}));
  p.u32("expert_feed_forward_length", d.ff_exp);
  p.u32("expert_shared_count", p.opt_int({"n_shared_experts"}).value_or(0));
  p.u32("leading_dense_block_count", p.opt_int({"first_k_dense_replace"}).value_or(0));
  p.u32("expert_gating_func", 2);  // sigmoid
  p.f32("expert_weights_scale", p.opt_float({"routed_scaling_factor"}).value_or(1.0));
  p.boolean("expert_weights_norm", p.opt_bool({"norm_topk_prob"}).value_or(false));
}

std::vector<TensorRule> attention_rules() {
  using D = Dim;
  return {
      {"model.embed_tokens.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"model.norm.weight", "output_norm.weight", {D::Embd}},
      {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
      {"model.layers.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.self_attn.q_proj.weight", "blk.{bid}.attn_q.weight", {D::Q, D::Embd}},
      {"model.layers.{bid}.self_attn.k_proj.weight", "blk.{bid}.attn_k.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.v_proj.weight", "blk.{bid}.attn_v.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.q_proj.bias", "blk.{bid}.attn_q.bias", {D::Q}},
      {"model.layers.{bid}.self_attn.k_proj.bias", "blk.{bid}.attn_k.bias", {D::KV}},
      {"model.layers.{bid}.self_attn.v_proj.bias", "blk.{bid}.attn_v.bias", {D::KV}},
      {"model.layers.{bid}.self_attn.o_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
      {"model.layers.{bid}.mlp.down_proj.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
  };
}

ArchDef glm4() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "glm4";
  a.hf_classes = {"Glm4ForCausalLM"};
  a.params = glm4_params;
  a.vocab = vocab_gpt2;
  a.rules = attention_rules();
  a.rules.push_back({"model.layers.{bid}.post_self_attn_layernorm.weight", "blk.{bid}.post_attention_norm.weight",
                     {D::Embd}});
  a.rules.push_back({"model.layers.{bid}.post_attention_layernorm.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}});
  a.rules.push_back({"model.layers.{bid}.post_mlp_layernorm.weight", "blk.{bid}.post_ffw_norm.weight", {D::Embd}});
  a.rules.push_back({"model.layers.{bid}.mlp.gate_up_proj.weight", "blk.{bid}.ffn_up.weight", {D::FF2, D::Embd}});
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"},       {"blk.{bid}.attn_q.weight"},
                      {"blk.{bid}.attn_output.weight"},     {"blk.{bid}.post_attention_norm.weight"},
                      {"blk.{bid}.ffn_norm.weight"},        {"blk.{bid}.ffn_up.weight"},
                      {"blk.{bid}.ffn_down.weight"},        {"blk.{bid}.post_ffw_norm.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  return a;
}

ArchDef glm4moe() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "glm4moe";
  a.hf_classes = {"Glm4MoeForCausalLM"};
  a.params = glm4moe_params;
  a.vocab = vocab_gpt2;
  a.rules = attention_rules();
  for (TensorRule r : std::vector<TensorRule>{
           {"model.layers.{bid}.self_attn.q_norm.weight", "blk.{bid}.attn_q_norm.weight", {D::HeadDim}},
           {"model.layers.{bid}.self_attn.k_norm.weight", "blk.{bid}.attn_k_norm.weight", {D::HeadDim}},
           {"model.layers.{bid}.post_attention_layernorm.weight", "blk.{bid}.post_attention_norm.weight", {D::Embd}},
           {"model.layers.{bid}.mlp.gate_proj.weight", "blk.{bid}.ffn_gate.weight", {D::FF, D::Embd}},
           {"model.layers.{bid}.mlp.up_proj.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
       }) {
    a.rules.push_back(r);
  }
  for (const TensorRule& r : deepseek_moe_rules()) a.rules.push_back(r);
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"},
                      {"blk.{bid}.attn_q.weight"},
                      {"blk.{bid}.attn_output.weight"},
                      {"blk.{bid}.post_attention_norm.weight"},
                      {"blk.{bid}.ffn_down.weight", "blk.{bid}.ffn_down_exps.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  a.drop = drop_mtp_layers;
  return a;
}

}  // namespace

std::vector<ArchDef> glm4_archs() { return {glm4(), glm4moe()}; }

}  // namespace ferrite::convert
