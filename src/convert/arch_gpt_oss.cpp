// gpt-oss (GptOssForCausalLM) in ik_llama.cpp's layout (general.architecture
// "gpt-oss"; src/model/arch_gpt_oss.cpp runs it): a Llama-style decoder with
// biases on Q, K, V and the output projection, a learned sink logit per head
// (self_attn.sinks -> attn_sinks.weight), sliding-window attention on the even
// layers, and experts in every layer behind a router with a bias. The experts
// are stored stacked and fused as transformers keeps them:
//   mlp.experts.gate_up_proj       [E, n_embd, 2 ff]  (input-major: x @ W)
//   mlp.experts.gate_up_proj_bias  [E, 2 ff]
//   mlp.experts.down_proj          [E, ff, n_embd]
//   mlp.experts.down_proj_bias     [E, n_embd]
// with gate and up interleaved along 2 ff (gate = [..., 0::2], up = [..., 1::2]):
// each matrix is transposed to GGUF's [out, in] and split into its even
// (ffn_gate_exps) and odd (ffn_up_exps) rows; the biases likewise.
// Only unquantized checkpoints convert (OpenAI's releases keep the experts in
// MXFP4 blocks: dequantize them first); the SwiGLU's clamp (swiglu_limit) must
// be the engine's 7, and the layer pattern the engine's alternation. YaRN's
// correction range: transformers leaves it unrounded where config.json says
// truncate false (gpt-oss does); rope.scaling.yarn_truncate carries that to
// the engine (model/arch_gpt_oss.cpp).
#include <string>
#include <vector>

#include "convert/arch.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

constexpr double kSwigluLimit = 7.0;  // model/arch_gpt_oss.cpp's kOaiLimit

// layer_types must be sliding, full, sliding, full, ... (the engine's is_sliding).
void require_alternating_layers(const Params& p) {
  const Json& c = p.files().config;
  if (!c.contains("layer_types")) return;
  const Json& v = c["layer_types"];
  if (!v.is_array() || static_cast<int64_t>(v.size()) != p.dims.n_layer) {
    throw ModelError(p.config_path() + ": layer_types must list num_hidden_layers layer kinds");
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string want = i % 2 == 0 ? "sliding_attention" : "full_attention";
    if (!v[i].is_string() || v[i].get<std::string>() != want) {
      throw ModelError(p.config_path() + ": layer_types[" + std::to_string(i) + "] is not '" + want +
                       "' (gpt-oss runs sliding-window attention on the even layers, full on the odd ones)");
    }
  }
}

void gpt_oss_params(Params& p) {
  decoder_dims(p);
  Dims& d = p.dims;
  d.experts = p.req_int({"num_local_experts"});
  d.ff_exp = d.ff;
  if (p.files().config.contains("quantization_config")) {
    throw ModelError(p.config_path() + ": quantization_config: the experts are quantized (MXFP4 blocks); only "
                     "unquantized gpt-oss checkpoints convert (dequantize it first)");
  }
  if (const double limit = p.opt_float({"swiglu_limit"}).value_or(kSwigluLimit); limit != kSwigluLimit) {
    throw ModelError(p.config_path() + ": swiglu_limit " + std::to_string(limit) + " is not supported (7)");
  }
  require_alternating_layers(p);
  base_params(p);
  p.u32("expert_count", d.experts);
  p.u32("expert_used_count", p.req_int({"num_experts_per_tok", "experts_per_token"}));
  p.u32("expert_feed_forward_length", d.ff_exp);
  p.u32("attention.sliding_window", p.req_int({"sliding_window"}));
  if (const Json* rs = p.rope_scaling()) {
    const std::string where = p.config_path() + " rope_scaling";
    const std::string type = rs->value("rope_type", rs->value("type", std::string()));
    if (type != "yarn") throw ModelError(where + ": rope scaling '" + type + "' is not supported (yarn)");
    p.str("rope.scaling.type", "yarn");
    p.f32("rope.scaling.factor", json_number(*rs, "factor", where).value_or(1.0));
    if (auto ctx = json_int(*rs, "original_max_position_embeddings", where)) {
      p.u32("rope.scaling.original_context_length", *ctx);
    }
    // transformers' truncate (default true): whether YaRN's correction range
    // is rounded to whole dimensions; gpt-oss's config says false.
    bool truncate = true;
    if (auto t = rs->find("truncate"); t != rs->end()) {
      if (!t->is_boolean()) throw ModelError(where + ": truncate must be true or false");
      truncate = t->get<bool>();
    }
    p.boolean("rope.scaling.yarn_truncate", truncate);
  }
}

}  // namespace

std::vector<ArchDef> gpt_oss_archs() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "gpt-oss";
  a.hf_classes = {"GptOssForCausalLM"};
  a.params = gpt_oss_params;
  a.vocab = vocab_gpt2;
  a.rules = {
      {"model.embed_tokens.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"model.norm.weight", "output_norm.weight", {D::Embd}},
      {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
      {"model.layers.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.post_attention_layernorm.weight", "blk.{bid}.post_attention_norm.weight", {D::Embd}},
      {"model.layers.{bid}.self_attn.q_proj.weight", "blk.{bid}.attn_q.weight", {D::Q, D::Embd}},
      {"model.layers.{bid}.self_attn.q_proj.bias", "blk.{bid}.attn_q.bias", {D::Q}},
      {"model.layers.{bid}.self_attn.k_proj.weight", "blk.{bid}.attn_k.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.k_proj.bias", "blk.{bid}.attn_k.bias", {D::KV}},
      {"model.layers.{bid}.self_attn.v_proj.weight", "blk.{bid}.attn_v.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.v_proj.bias", "blk.{bid}.attn_v.bias", {D::KV}},
      {"model.layers.{bid}.self_attn.o_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
      {"model.layers.{bid}.self_attn.o_proj.bias", "blk.{bid}.attn_output.bias", {D::Embd}},
      {"model.layers.{bid}.self_attn.sinks", "blk.{bid}.attn_sinks.weight", {D::Any}},
      {"model.layers.{bid}.mlp.router.weight", "blk.{bid}.ffn_gate_inp.weight", {D::Experts, D::Embd}},
      {"model.layers.{bid}.mlp.router.bias", "blk.{bid}.ffn_gate_inp.bias", {D::Experts}},
      {"model.layers.{bid}.mlp.experts.gate_up_proj", "blk.{bid}.ffn_gate_exps.weight", {D::Experts, D::Embd, D::FF2},
       kTranspose | kSplitGateUp | kInterleaved},
      {"model.layers.{bid}.mlp.experts.gate_up_proj_bias", "blk.{bid}.ffn_gate_exps.bias", {D::Experts, D::FF2},
       kSplitGateUp | kInterleaved | kSplitLastDim},
      {"model.layers.{bid}.mlp.experts.down_proj", "blk.{bid}.ffn_down_exps.weight", {D::Experts, D::FF, D::Embd},
       kTranspose},
      {"model.layers.{bid}.mlp.experts.down_proj_bias", "blk.{bid}.ffn_down_exps.bias", {D::Experts, D::Embd}},
  };
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"},      {"blk.{bid}.attn_q.weight"},
                      {"blk.{bid}.attn_k.weight"},         {"blk.{bid}.attn_v.weight"},
                      {"blk.{bid}.attn_output.weight"},    {"blk.{bid}.attn_sinks.weight"},
                      {"blk.{bid}.post_attention_norm.weight"}, {"blk.{bid}.ffn_gate_inp.weight"},
                      {"blk.{bid}.ffn_gate_exps.weight"},  {"blk.{bid}.ffn_down_exps.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight", "output.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  return {a};
}

}  // namespace ferrite::convert
