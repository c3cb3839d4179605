// hunyuan-moe (HunYuanMoEV1ForCausalLM: Hunyuan-A13B): the pre-norm decoder
// with per-head q/k RMSNorms (query_layernorm, key_layernorm), NeoX RoPE as
// stored, experts in every layer routed by mlp.gate.wg plus an ungated
// shared MLP (mlp.shared_mlp -> ffn_*_shexp). moe_topk and num_shared_expert
// may be per-layer lists, which must then agree (the
// engine has one value). RoPE's "dynamic" scaling with alpha (Hunyuan's NTK
// form) becomes the base rope_theta * alpha^(d / (d - 2)), d = head_dim.
#include <cmath>
#include <string>

#include "convert/arch.h"
#include "convert/decoder_rules.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

// An integer key that may be a list of equal per-layer values.
int64_t uniform_int(const Params& p, const char* key) {
  const Json& c = p.files().config;
  const auto it = c.find(key);
  if (it == c.end()) throw ModelError(p.config_path() + ": " + key + " is missing");
  if (it->is_number_integer()) return it->get<int64_t>();
  if (!it->is_array() || it->empty()) throw ModelError(p.config_path() + ": " + key + " is neither a number nor a list");
  const Json& first = (*it)[0];
  for (const Json& v : *it) {
    if (!v.is_number_integer() || v != first) {
      throw ModelError(p.config_path() + ": " + key + " differs between layers, which ferrite does not support");
    }
  }
  return first.get<int64_t>();
}

void hunyuan_params(Params& p) {
  decoder_dims(p);
  Dims& d = p.dims;
  d.experts = p.req_int({"num_experts"});
  base_params(p);
  p.u32("rope.dimension_count", d.head_dim);
  p.u32("expert_count", d.experts);
  p.u32("expert_used_count", uniform_int(p, "moe_topk"));
  // transformers' HunYuanMoEV1 experts are intermediate_size wide (as are the
  // released files' moe_intermediate_size entries).
  d.ff_exp = d.ff;
  p.u32("expert_feed_forward_length", d.ff_exp);
  if (p.files().config.contains("num_shared_expert")) {
    p.u32("expert_shared_count", uniform_int(p, "num_shared_expert"));
  }
  if (const Json* rs = p.rope_scaling()) {
    const auto alpha = json_number(*rs, "alpha", p.config_path() + " rope_scaling");
    if (alpha && *alpha > 0.0) {
      const double dim = static_cast<double>(d.head_dim);
      p.f32("rope.freq_base", p.rope_theta().value_or(10000.0) * std::pow(*alpha, dim / (dim - 2.0)));
    }
  }
}

}  // namespace

std::vector<ArchDef> hunyuan_archs() {
  using D = Dim;
  DecoderRuleOptions o;
  o.moe = MoeLayout::Qwen;
  ArchDef a;
  a.gguf_arch = "hunyuan-moe";
  a.hf_classes = {"HunYuanMoEV1ForCausalLM"};
  a.params = hunyuan_params;
  a.vocab = vocab_gpt2;
  a.rules = decoder_rules(o);
  for (TensorRule r : std::vector<TensorRule>{
           {"model.layers.{bid}.self_attn.query_layernorm.weight", "blk.{bid}.attn_q_norm.weight", {D::HeadDim}},
           {"model.layers.{bid}.self_attn.key_layernorm.weight", "blk.{bid}.attn_k_norm.weight", {D::HeadDim}},
           {"model.layers.{bid}.mlp.gate.wg.weight", "blk.{bid}.ffn_gate_inp.weight", {D::Experts, D::Embd}},
           {"model.layers.{bid}.mlp.shared_mlp.gate_proj.weight", "blk.{bid}.ffn_gate_shexp.weight", {D::Any, D::Embd}},
           {"model.layers.{bid}.mlp.shared_mlp.up_proj.weight", "blk.{bid}.ffn_up_shexp.weight", {D::Any, D::Embd}},
           {"model.layers.{bid}.mlp.shared_mlp.down_proj.weight", "blk.{bid}.ffn_down_shexp.weight",
            {D::Embd, D::Any}},
       }) {
    a.rules.push_back(r);
  }
  a.layer_requires = decoder_layer_requires(o);
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  return {a};
}

}  // namespace ferrite::convert
