// granitehybrid: GraniteMoeHybridForCausalLM (IBM Granite 4.0 H). As
// llama.cpp's converter writes it: Mamba-2 layers as mamba2's (arch_mamba2.cpp
// has the transforms), the others attention (Q/K permuted for adjacent-pair
// RoPE, as Granite's) with a per-layer attention.head_count_kv that is 0 on
// the Mamba-2 layers; the experts' fused input_linear [E, 2 ff, n] split into
// ffn_gate_exps and ffn_up_exps, the shared MLP's into ffn_gate_shexp and
// ffn_up_shexp (ffn_gate / ffn_up: the dense FFN when there are no experts);
// Granite's four multipliers; rope.scaling.finetuned true only with
// position_embedding_type "rope" (Granite 4.0 H has none).
#include <string>
#include <vector>

#include "convert/arch.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

// Whether layer il attends (layer_types, or attn_layer_indices).
std::vector<bool> attention_layers(const Params& p) {
  const Json& c = p.files().config;
  const int64_t n = p.dims.n_layer;
  std::vector<bool> attn(static_cast<size_t>(n), false);
  if (c.contains("layer_types") && c["layer_types"].is_array()) {
    const Json& t = c["layer_types"];
    if (static_cast<int64_t>(t.size()) != n) throw ModelError(p.config_path() + ": layer_types has the wrong length");
    for (int64_t i = 0; i < n; ++i) {
      const std::string k = t[static_cast<size_t>(i)].is_string() ? t[static_cast<size_t>(i)].get<std::string>() : "";
      attn[static_cast<size_t>(i)] = k == "attention" || k == "full_attention";
    }
  } else if (c.contains("attn_layer_indices") && c["attn_layer_indices"].is_array()) {
    for (const Json& v : c["attn_layer_indices"]) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= n) {
        throw ModelError(p.config_path() + ": attn_layer_indices holds a layer out of range");
      }
      attn[static_cast<size_t>(v.get<int64_t>())] = true;
    }
  } else {
    throw ModelError(p.config_path() + ": neither layer_types nor attn_layer_indices says which layers attend");
  }
  return attn;
}

void granite_hybrid_params(Params& p) {
  decoder_dims(p);
  Dims& d = p.dims;
  d.ff_exp = d.ff;
  d.ff_shexp = p.req_int({"shared_intermediate_size"});
  const int64_t n_head = p.req_int({"mamba_n_heads"}), head_dim = p.req_int({"mamba_d_head"});
  d.ssm_groups = p.opt_int({"mamba_n_groups"}).value_or(1);
  if (d.ssm_groups == 0 || n_head % d.ssm_groups != 0) {
    throw ModelError(p.config_path() + ": mamba_n_heads is not a multiple of mamba_n_groups");
  }
  const bool rope = p.files().config.value("position_embedding_type", std::string()) == "rope";
  p.u32("block_count", d.n_layer);
  p.u32("context_length", rope ? p.opt_int({"max_position_embeddings"}).value_or(4096) : int64_t{1} << 20);
  p.u32("embedding_length", d.embd);
  p.u32("feed_forward_length", d.ff);
  p.u32("attention.head_count", d.n_head);
  std::vector<gguf::Value> kv;
  for (bool a : attention_layers(p)) kv.push_back(gguf::Value::u32(a ? static_cast<uint32_t>(d.n_head_kv) : 0u));
  p.set_key(p.arch() + ".attention.head_count_kv", gguf::Value::array(gguf::ValueType::UINT32, std::move(kv)));
  p.u32("rope.dimension_count", d.head_dim);
  if (auto v = p.rope_theta()) p.f32("rope.freq_base", *v);
  p.boolean("rope.scaling.finetuned", rope);
  p.f32("attention.layer_norm_rms_epsilon", p.opt_float({"rms_norm_eps"}).value_or(1e-6));
  if (d.experts > 0) {
    p.u32("expert_count", d.experts);
    p.u32("expert_used_count", p.req_int({"num_experts_per_tok"}));
    p.u32("expert_shared_feed_forward_length", d.ff_shexp);
  }
  if (auto v = p.opt_float({"attention_multiplier"})) p.f32("attention.scale", *v);
  if (auto v = p.opt_float({"embedding_multiplier"})) p.f32("embedding_scale", *v);
  if (auto v = p.opt_float({"residual_multiplier"})) p.f32("residual_scale", *v);
  if (auto v = p.opt_float({"logits_scaling"})) p.f32("logit_scale", *v);
  p.u32("ssm.conv_kernel", p.opt_int({"mamba_d_conv"}).value_or(4));
  p.u32("ssm.state_size", p.req_int({"mamba_d_state"}));
  p.u32("ssm.group_count", d.ssm_groups);
  p.u32("ssm.inner_size", n_head * head_dim);
  p.u32("ssm.time_step_rank", n_head);
}

}  // namespace

std::vector<ArchDef> granite_hybrid_archs() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "granitehybrid";
  a.hf_classes = {"GraniteMoeHybridForCausalLM"};
  a.params = granite_hybrid_params;
  a.vocab = vocab_gpt2;
  a.rules = {
      {"model.embed_tokens.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"model.norm.weight", "output_norm.weight", {D::Embd}},
      {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
      {"model.layers.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.post_attention_layernorm.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.self_attn.q_proj.weight", "blk.{bid}.attn_q.weight", {D::Q, D::Embd}, kPermuteQ},
      {"model.layers.{bid}.self_attn.k_proj.weight", "blk.{bid}.attn_k.weight", {D::KV, D::Embd}, kPermuteK},
      {"model.layers.{bid}.self_attn.v_proj.weight", "blk.{bid}.attn_v.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.o_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
      {"model.layers.{bid}.mamba.in_proj.weight", "blk.{bid}.ssm_in.weight", {D::Any, D::Embd}},
      {"model.layers.{bid}.mamba.conv1d.weight", "blk.{bid}.ssm_conv1d.weight", {D::Any, D::One, D::Any}, kSqueeze},
      {"model.layers.{bid}.mamba.conv1d.bias", "blk.{bid}.ssm_conv1d.bias", {D::Any}},
      {"model.layers.{bid}.mamba.dt_bias", "blk.{bid}.ssm_dt.bias", {D::Any}},
      {"model.layers.{bid}.mamba.A_log", "blk.{bid}.ssm_a", {D::Any}, kNegExp | kUnsqueeze},
      {"model.layers.{bid}.mamba.D", "blk.{bid}.ssm_d", {D::Any}, kUnsqueeze},
      {"model.layers.{bid}.mamba.norm.weight", "blk.{bid}.ssm_norm.weight", {D::Any}, kGroupRows},
      {"model.layers.{bid}.mamba.out_proj.weight", "blk.{bid}.ssm_out.weight", {D::Embd, D::Any}},
      {"model.layers.{bid}.block_sparse_moe.router.layer.weight", "blk.{bid}.ffn_gate_inp.weight",
       {D::Experts, D::Embd}},
      {"model.layers.{bid}.block_sparse_moe.input_linear.weight", "blk.{bid}.ffn_gate_exps.weight",
       {D::Experts, D::FF2, D::Embd}, kSplitGateUp},
      {"model.layers.{bid}.block_sparse_moe.output_linear.weight", "blk.{bid}.ffn_down_exps.weight",
       {D::Experts, D::Embd, D::FFExp}},
      {"model.layers.{bid}.shared_mlp.input_linear.weight", "blk.{bid}.ffn_gate_shexp.weight", {D::Any, D::Embd},
       kSplitGateUp},
      {"model.layers.{bid}.shared_mlp.output_linear.weight", "blk.{bid}.ffn_down_shexp.weight", {D::Embd, D::Any}},
  };
  // Without experts the shared MLP is the layer's dense FFN (llama.cpp's names for it).
  a.gguf_rename = [](const std::string& gguf, const Params& p) {
    const size_t at = gguf.find("_shexp.weight");
    if (p.dims.experts > 0 || at == std::string::npos) return gguf;
    return gguf.substr(0, at) + ".weight";
  };
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"}, {"blk.{bid}.ssm_in.weight", "blk.{bid}.attn_q.weight"},
                      {"blk.{bid}.ffn_down_shexp.weight", "blk.{bid}.ffn_down.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  return {a};
}

}  // namespace ferrite::convert
