// The Llama-layout decoders with LayerNorms (weight and bias) and partial
// NeoX RoPE over head_dim x partial_rotary_factor dimensions, pairs as
// stored: stablelm (StableLmForCausalLM: StableLM 2, StableLM Zephyr; not
// the 12B's per-head q/k LayerNorms, qk_layernorm, nor parallel residuals)
// and nemotron (NemotronForCausalLM: Nemotron-4/Minitron: LayerNorm1p, whose
// weights llama.cpp's converter stores as 1 + w, and the squared-ReLU MLP
// without gate).
#include <string>

#include "convert/arch.h"
#include "convert/decoder_rules.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

void partial_rope(Params& p, double fallback) {
  double partial = p.opt_float({"partial_rotary_factor", "rope_percent"}).value_or(fallback);
  if (const Json* rp = json_object(p.files().config, "rope_parameters", p.config_path())) {
    partial = json_number(*rp, "partial_rotary_factor", p.config_path()).value_or(partial);
  }
  p.u32("rope.dimension_count", static_cast<int64_t>(static_cast<double>(p.dims.head_dim) * partial));
}

void stablelm_params(Params& p) {
  if (p.opt_bool({"qk_layernorm"}).value_or(false) || p.opt_bool({"use_parallel_residual"}).value_or(false)) {
    throw ModelError(p.config_path() + ": StableLM with qk_layernorm or use_parallel_residual is not supported");
  }
  decoder_dims(p);
  base_params(p);
  partial_rope(p, 0.25);
}

void nemotron_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  partial_rope(p, 0.5);
  if (auto v = p.opt_float({"norm_eps"})) p.f32("attention.layer_norm_epsilon", *v);
}

ArchDef layer_norm_decoder(const char* arch, const char* hf_class, bool nemotron) {
  using D = Dim;
  const uint32_t norm = nemotron ? uint32_t{kAddOne} : 0u;
  ArchDef a;
  a.gguf_arch = arch;
  a.hf_classes = {hf_class};
  a.params = nemotron ? nemotron_params : stablelm_params;
  a.vocab = vocab_gpt2;
  a.rules = decoder_rules({});
  for (TensorRule& r : a.rules) {
    const std::string g = r.gguf;
    if (g.find("norm.weight") != std::string::npos) r.flags |= norm;
  }
  a.rules.push_back({"model.norm.bias", "output_norm.bias", {D::Embd}});
  a.rules.push_back({"model.layers.{bid}.input_layernorm.bias", "blk.{bid}.attn_norm.bias", {D::Embd}});
  a.rules.push_back({"model.layers.{bid}.post_attention_layernorm.bias", "blk.{bid}.ffn_norm.bias", {D::Embd}});
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"}, {"blk.{bid}.attn_q.weight"},  {"blk.{bid}.attn_k.weight"},
                      {"blk.{bid}.attn_v.weight"},    {"blk.{bid}.attn_output.weight"}, {"blk.{bid}.ffn_norm.weight"},
                      {"blk.{bid}.ffn_up.weight"},    {"blk.{bid}.ffn_down.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  return a;
}

}  // namespace

std::vector<ArchDef> layer_norm_decoder_archs() {
  return {layer_norm_decoder("stablelm", "StableLmForCausalLM", false),
          layer_norm_decoder("nemotron", "NemotronForCausalLM", true)};
}

}  // namespace ferrite::convert
