// ernie4_5 (Ernie4_5ForCausalLM: ERNIE 4.5 0.3B) and ernie4_5-moe
// (Ernie4_5_MoeForCausalLM: ERNIE-4.5-21B-A3B, 300B-A47B), as llama.cpp's
// converter writes them: Llama's layout with pairs as stored (no
// reordering), the output tied unless lm_head exists; the MoE model's
// experts from moe_layer_start_index on, every moe_layer_interval layers,
// softmax-routed with the selection bias moe_statics.e_score_correction_bias
// [1, E] (-> exp_probs_b.bias [E]) and shared experts (mlp.shared_experts).
// The multi-token-prediction weights (model.mtp_*) are left out.
#include "convert/arch.h"
#include "convert/decoder_rules.h"

namespace ferrite::convert {
namespace {

void ernie_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  p.u32("rope.dimension_count", p.dims.head_dim);
}

void ernie_moe_params(Params& p) {
  decoder_dims(p);
  p.dims.experts = p.req_int({"moe_num_experts"});
  base_params(p);
  p.u32("rope.dimension_count", p.dims.head_dim);
  p.u32("expert_count", p.dims.experts);
  p.u32("expert_used_count", p.req_int({"moe_k"}));
  p.u32("interleave_moe_layer_step", p.opt_int({"moe_layer_interval"}).value_or(1));
  p.u32("leading_dense_block_count", p.opt_int({"moe_layer_start_index"}).value_or(0));
  p.u32("expert_feed_forward_length", p.dims.ff_exp);
  if (auto n = p.opt_int({"moe_num_shared_experts"})) p.u32("expert_shared_count", *n);
}

VocabKeys spm_or_gpt2(const HfFiles& f, int64_t vocab_size, const VocabOptions& opt) {
  return f.has("tokenizer.model") ? vocab_sentencepiece(f, vocab_size) : vocab_gpt2(f, vocab_size, opt);
}

ArchDef ernie(bool moe) {
  using D = Dim;
  DecoderRuleOptions o;
  if (moe) o.moe = MoeLayout::Qwen;
  ArchDef a;
  a.gguf_arch = moe ? "ernie4_5-moe" : "ernie4_5";
  a.hf_classes = {moe ? "Ernie4_5_MoeForCausalLM" : "Ernie4_5ForCausalLM"};
  a.params = moe ? ernie_moe_params : ernie_params;
  a.vocab = spm_or_gpt2;
  a.rules = decoder_rules(o);
  if (moe) {
    a.rules.push_back({"model.layers.{bid}.mlp.moe_statics.e_score_correction_bias", "blk.{bid}.exp_probs_b.bias",
                       {D::One, D::Experts}, kSqueeze});
    a.rules.push_back({"model.layers.{bid}.mlp.shared_experts.gate_proj.weight", "blk.{bid}.ffn_gate_shexp.weight",
                       {D::Any, D::Embd}});
    a.rules.push_back({"model.layers.{bid}.mlp.shared_experts.up_proj.weight", "blk.{bid}.ffn_up_shexp.weight",
                       {D::Any, D::Embd}});
    a.rules.push_back({"model.layers.{bid}.mlp.shared_experts.down_proj.weight", "blk.{bid}.ffn_down_shexp.weight",
                       {D::Embd, D::Any}});
  }
  a.layer_requires = decoder_layer_requires(o);
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  a.drop_prefixes = {"model.mtp_"};
  return a;
}

}  // namespace

std::vector<ArchDef> ernie_archs() { return {ernie(false), ernie(true)}; }

}  // namespace ferrite::convert
