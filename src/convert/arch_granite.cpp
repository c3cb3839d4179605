// granite (IBM Granite 3.x) and granitemoe (Granite 3.x MoE): Llama's layout
// (Q/K rows reordered for adjacent-pair RoPE) with Granite's four
// multipliers as llama.cpp's converter writes them (attention.scale,
// embedding_scale, residual_scale, logit_scale); granitemoe's experts are
// stored fused, block_sparse_moe.input_linear [E, 2 ff, n] (gate then up:
// split into ffn_gate_exps and ffn_up_exps) and output_linear [E, n, ff],
// routed by block_sparse_moe.router.layer.
#include "convert/arch.h"
#include "convert/decoder_rules.h"

namespace ferrite::convert {
namespace {

void granite_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  p.u32("rope.dimension_count", p.dims.head_dim);
  if (auto v = p.opt_float({"attention_multiplier"})) p.f32("attention.scale", *v);
  if (auto v = p.opt_float({"embedding_multiplier"})) p.f32("embedding_scale", *v);
  if (auto v = p.opt_float({"residual_multiplier"})) p.f32("residual_scale", *v);
  if (auto v = p.opt_float({"logits_scaling"})) p.f32("logit_scale", *v);
}

ArchDef granite(const char* arch, const char* hf_class, bool moe) {
  using D = Dim;
  DecoderRuleOptions o;
  o.permute_qk = true;
  ArchDef a;
  a.gguf_arch = arch;
  a.hf_classes = {hf_class};
  a.params = granite_params;
  a.vocab = vocab_gpt2;
  a.rules = decoder_rules(o);
  if (moe) {
    a.rules.push_back({"model.layers.{bid}.block_sparse_moe.router.layer.weight", "blk.{bid}.ffn_gate_inp.weight",
                       {D::Experts, D::Embd}});
    a.rules.push_back({"model.layers.{bid}.block_sparse_moe.input_linear.weight", "blk.{bid}.ffn_gate_exps.weight",
                       {D::Experts, D::FF2, D::Embd}, kSplitGateUp});
    a.rules.push_back({"model.layers.{bid}.block_sparse_moe.output_linear.weight", "blk.{bid}.ffn_down_exps.weight",
                       {D::Experts, D::Embd, D::FFExp}});
  }
  a.layer_requires = decoder_layer_requires(o);
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  return a;
}

}  // namespace

std::vector<ArchDef> granite_archs() {
  return {granite("granite", "GraniteForCausalLM", false), granite("granitemoe", "GraniteMoeForCausalLM", true)};
}

}  // namespace ferrite::convert
