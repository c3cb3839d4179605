// deepseek2 (DeepseekV2ForCausalLM: DeepSeek-V2, V2-Lite, V2.5;
// DeepseekV3ForCausalLM: DeepSeek-V3, R1, Kimi-K2 in this layout): multi-
// head latent attention kept in llama.cpp c392e50's form (attn_kv_b whole;
// the engine derives the absorbed matrices at load), the rotary parts' pairs
// as stored, first_k_dense_replace dense layers, then routed experts
// (softmax for V2, sigmoid with the selection bias
// gate.e_score_correction_bias for V3) and shared experts. Group-limited
// routing (n_group > 1) is not applied, as llama.cpp c392e50 does not apply
// it. The multi-token-prediction layers past num_hidden_layers are left out.
#include <cmath>
#include <string>

#include "convert/arch.h"
#include "convert/decoder_rules.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

void deepseek2_params(Params& p, bool v3) {
  decoder_dims(p);
  Dims& d = p.dims;
  d.experts = p.req_int({"n_routed_experts"});
  base_params(p);
  const int64_t nope = p.req_int({"qk_nope_head_dim"}), rope = p.req_int({"qk_rope_head_dim"});
  const int64_t v_dim = p.req_int({"v_head_dim"});
  p.u32("vocab_size", d.vocab);
  p.u32("leading_dense_block_count", p.opt_int({"first_k_dense_replace"}).value_or(0));
  if (auto q = p.opt_int({"q_lora_rank"})) p.u32("attention.q_lora_rank", *q);
  p.u32("attention.kv_lora_rank", p.req_int({"kv_lora_rank"}));
  p.u32("attention.key_length", nope + rope);
  p.u32("attention.value_length", v_dim);
  p.u32("rope.dimension_count", rope);
  p.u32("expert_count", d.experts);
  p.u32("expert_used_count", p.req_int({"num_experts_per_tok"}));
  p.u32("expert_feed_forward_length", d.ff_exp);
  p.u32("expert_shared_count", p.opt_int({"n_shared_experts"}).value_or(0));
  p.f32("expert_weights_scale", p.opt_float({"routed_scaling_factor"}).value_or(1.0));
  p.boolean("expert_weights_norm", p.opt_bool({"norm_topk_prob"}).value_or(false));
  const std::string scoring = p.files().config.value("scoring_func", std::string(v3 ? "sigmoid" : "softmax"));
  if (scoring != "softmax" && scoring != "sigmoid") {
    throw ModelError(p.config_path() + ": scoring_func '" + scoring + "' (softmax or sigmoid)");
  }
  p.u32("expert_gating_func", scoring == "sigmoid" ? 2 : 1);
  if (const Json* rs = p.rope_scaling()) {
    const std::string where = p.config_path() + " rope_scaling";
    const std::string type = rs->value("type", rs->value("rope_type", std::string()));
    if (type != "yarn") throw ModelError(where + ": rope scaling '" + type + "' is not supported (yarn)");
    p.str("rope.scaling.type", "yarn");
    p.f32("rope.scaling.factor", json_number(*rs, "factor", where).value_or(1.0));
    if (auto ctx = json_int(*rs, "original_max_position_embeddings", where)) {
      p.u32("rope.scaling.original_context_length", *ctx);
    }
    p.f32("rope.scaling.yarn_log_multiplier", 0.1 * json_number(*rs, "mscale_all_dim", where).value_or(0.0));
  }
}

ArchDef deepseek2(const char* hf_class, bool v3) {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "deepseek2";
  a.hf_classes = {hf_class};
  a.params = [v3](Params& p) { deepseek2_params(p, v3); };
  a.vocab = vocab_gpt2;
  a.rules = {
      {"model.embed_tokens.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"model.norm.weight", "output_norm.weight", {D::Embd}},
      {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
      {"model.layers.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.post_attention_layernorm.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.self_attn.q_proj.weight", "blk.{bid}.attn_q.weight", {D::Any, D::Embd}},
      {"model.layers.{bid}.self_attn.q_a_proj.weight", "blk.{bid}.attn_q_a.weight", {D::Any, D::Embd}},
      {"model.layers.{bid}.self_attn.q_a_layernorm.weight", "blk.{bid}.attn_q_a_norm.weight", {D::Any}},
      {"model.layers.{bid}.self_attn.q_b_proj.weight", "blk.{bid}.attn_q_b.weight", {D::Any, D::Any}},
      {"model.layers.{bid}.self_attn.kv_a_proj_with_mqa.weight", "blk.{bid}.attn_kv_a_mqa.weight", {D::Any, D::Embd}},
      {"model.layers.{bid}.self_attn.kv_a_layernorm.weight", "blk.{bid}.attn_kv_a_norm.weight", {D::Any}},
      {"model.layers.{bid}.self_attn.kv_b_proj.weight", "blk.{bid}.attn_kv_b.weight", {D::Any, D::Any}},
      {"model.layers.{bid}.self_attn.o_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Any}},
      {"model.layers.{bid}.mlp.gate_proj.weight", "blk.{bid}.ffn_gate.weight", {D::FF, D::Embd}},
      {"model.layers.{bid}.mlp.up_proj.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
      {"model.layers.{bid}.mlp.down_proj.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
  };
  for (const TensorRule& r : deepseek_moe_rules()) a.rules.push_back(r);
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"},
                      {"blk.{bid}.attn_q.weight", "blk.{bid}.attn_q_b.weight"},
                      {"blk.{bid}.attn_kv_a_mqa.weight"},
                      {"blk.{bid}.attn_kv_b.weight"},
                      {"blk.{bid}.attn_output.weight"},
                      {"blk.{bid}.ffn_norm.weight"},
                      {"blk.{bid}.ffn_down.weight", "blk.{bid}.ffn_down_exps.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight", "output.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  a.drop = drop_mtp_layers;
  return a;
}

}  // namespace

std::vector<ArchDef> deepseek2_archs() {
  return {deepseek2("DeepseekV2ForCausalLM", false), deepseek2("DeepseekV3ForCausalLM", true)};
}

}  // namespace ferrite::convert
