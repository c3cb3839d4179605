#include "convert/decoder_rules.h"

namespace ferrite::convert {

std::vector<TensorRule> decoder_rules(const DecoderRuleOptions& o) {
  using D = Dim;
  const uint32_t norm = o.gemma ? uint32_t{kAddOne} : 0u;
  const uint32_t pq = o.permute_qk ? uint32_t{kPermuteQ} : 0u, pk = o.permute_qk ? uint32_t{kPermuteK} : 0u;
  std::vector<TensorRule> r = {
      {"model.embed_tokens.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"model.norm.weight", "output_norm.weight", {D::Embd}, norm},
      {"lm_head.weight", o.gemma ? "" : "output.weight", {D::Vocab, D::Embd}},
      {"model.layers.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}, norm},
      {"model.layers.{bid}.self_attn.q_proj.weight", "blk.{bid}.attn_q.weight", {D::Q, D::Embd}, pq},
      {"model.layers.{bid}.self_attn.k_proj.weight", "blk.{bid}.attn_k.weight", {D::KV, D::Embd}, pk},
      {"model.layers.{bid}.self_attn.v_proj.weight", "blk.{bid}.attn_v.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.o_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
      {"model.layers.{bid}.self_attn.q_proj.bias", "blk.{bid}.attn_q.bias", {D::Q}, pq},
      {"model.layers.{bid}.self_attn.k_proj.bias", "blk.{bid}.attn_k.bias", {D::KV}, pk},
      {"model.layers.{bid}.self_attn.v_proj.bias", "blk.{bid}.attn_v.bias", {D::KV}},
      {"model.layers.{bid}.self_attn.o_proj.bias", "blk.{bid}.attn_output.bias", {D::Embd}},
      {"model.layers.{bid}.mlp.gate_proj.weight", "blk.{bid}.ffn_gate.weight", {D::FF, D::Embd}},
      {"model.layers.{bid}.mlp.up_proj.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
      {"model.layers.{bid}.mlp.down_proj.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
  };
  if (o.post_norms) {
    r.push_back({"model.layers.{bid}.post_attention_layernorm.weight", "blk.{bid}.post_attention_norm.weight",
                 {D::Embd}, norm});
    r.push_back({"model.layers.{bid}.pre_feedforward_layernorm.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}, norm});
    r.push_back({"model.layers.{bid}.post_feedforward_layernorm.weight", "blk.{bid}.post_ffw_norm.weight",
                 {D::Embd}, norm});
  } else {
    r.push_back({"model.layers.{bid}.post_attention_layernorm.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}, norm});
  }
  if (o.qk_norm) {
    r.push_back({"model.layers.{bid}.self_attn.q_norm.weight", "blk.{bid}.attn_q_norm.weight", {D::HeadDim}, norm});
    r.push_back({"model.layers.{bid}.self_attn.k_norm.weight", "blk.{bid}.attn_k_norm.weight", {D::HeadDim}, norm});
  }
  if (o.moe == MoeLayout::Mixtral) {
    r.push_back({"model.layers.{bid}.block_sparse_moe.gate.weight", "blk.{bid}.ffn_gate_inp.weight",
                 {D::Experts, D::Embd}});
    r.push_back({"model.layers.{bid}.block_sparse_moe.experts.{xid}.w1.weight", "blk.{bid}.ffn_gate_exps.weight",
                 {D::FFExp, D::Embd}});
    r.push_back({"model.layers.{bid}.block_sparse_moe.experts.{xid}.w2.weight", "blk.{bid}.ffn_down_exps.weight",
                 {D::Embd, D::FFExp}});
    r.push_back({"model.layers.{bid}.block_sparse_moe.experts.{xid}.w3.weight", "blk.{bid}.ffn_up_exps.weight",
                 {D::FFExp, D::Embd}});
  }
  if (o.moe == MoeLayout::Qwen || o.moe == MoeLayout::QwenShared) {
    r.push_back({"model.layers.{bid}.mlp.gate.weight", "blk.{bid}.ffn_gate_inp.weight", {D::Experts, D::Embd}});
    r.push_back({"model.layers.{bid}.mlp.experts.{xid}.gate_proj.weight", "blk.{bid}.ffn_gate_exps.weight",
                 {D::FFExp, D::Embd}});
    r.push_back({"model.layers.{bid}.mlp.experts.{xid}.up_proj.weight", "blk.{bid}.ffn_up_exps.weight",
                 {D::FFExp, D::Embd}});
    r.push_back({"model.layers.{bid}.mlp.experts.{xid}.down_proj.weight", "blk.{bid}.ffn_down_exps.weight",
                 {D::Embd, D::FFExp}});
  }
  if (o.moe == MoeLayout::QwenShared) {
    r.push_back({"model.layers.{bid}.mlp.shared_expert.gate_proj.weight", "blk.{bid}.ffn_gate_shexp.weight",
                 {D::FFShexp, D::Embd}});
    r.push_back({"model.layers.{bid}.mlp.shared_expert.up_proj.weight", "blk.{bid}.ffn_up_shexp.weight",
                 {D::FFShexp, D::Embd}});
    r.push_back({"model.layers.{bid}.mlp.shared_expert.down_proj.weight", "blk.{bid}.ffn_down_shexp.weight",
                 {D::Embd, D::FFShexp}});
    r.push_back({"model.layers.{bid}.mlp.shared_expert_gate.weight", "blk.{bid}.ffn_gate_inp_shexp.weight",
                 {D::One, D::Embd}});
  }
  return r;
}

std::vector<std::vector<const char*>> decoder_layer_requires(const DecoderRuleOptions& o) {
  std::vector<std::vector<const char*>> r = {
      {"blk.{bid}.attn_norm.weight"},   {"blk.{bid}.attn_q.weight"},      {"blk.{bid}.attn_k.weight"},
      {"blk.{bid}.attn_v.weight"},      {"blk.{bid}.attn_output.weight"}, {"blk.{bid}.ffn_norm.weight"},
      {"blk.{bid}.ffn_up.weight", "blk.{bid}.ffn_up_exps.weight"},
      {"blk.{bid}.ffn_down.weight", "blk.{bid}.ffn_down_exps.weight"},
  };
  if (o.post_norms) {
    r.push_back({"blk.{bid}.post_attention_norm.weight"});
    r.push_back({"blk.{bid}.post_ffw_norm.weight"});
  }
  if (o.qk_norm) {
    r.push_back({"blk.{bid}.attn_q_norm.weight"});
    r.push_back({"blk.{bid}.attn_k_norm.weight"});
  }
  return r;
}

std::vector<TensorRule> deepseek_moe_rules() {
  using D = Dim;
  return {
      {"model.layers.{bid}.mlp.gate.weight", "blk.{bid}.ffn_gate_inp.weight", {D::Experts, D::Embd}},
      {"model.layers.{bid}.mlp.gate.e_score_correction_bias", "blk.{bid}.exp_probs_b.bias", {D::Experts}},
      {"model.layers.{bid}.mlp.experts.{xid}.gate_proj.weight", "blk.{bid}.ffn_gate_exps.weight", {D::FFExp, D::Embd}},
      {"model.layers.{bid}.mlp.experts.{xid}.up_proj.weight", "blk.{bid}.ffn_up_exps.weight", {D::FFExp, D::Embd}},
      {"model.layers.{bid}.mlp.experts.{xid}.down_proj.weight", "blk.{bid}.ffn_down_exps.weight", {D::Embd, D::FFExp}},
      {"model.layers.{bid}.mlp.shared_experts.gate_proj.weight", "blk.{bid}.ffn_gate_shexp.weight", {D::Any, D::Embd}},
      {"model.layers.{bid}.mlp.shared_experts.up_proj.weight", "blk.{bid}.ffn_up_shexp.weight", {D::Any, D::Embd}},
      {"model.layers.{bid}.mlp.shared_experts.down_proj.weight", "blk.{bid}.ffn_down_shexp.weight", {D::Embd, D::Any}},
  };
}

}  // namespace ferrite::convert
