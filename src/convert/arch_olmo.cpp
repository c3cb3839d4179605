// olmo (AllenAI OLMo: LayerNorms without weights, Llama's Q/K reordering for
// adjacent-pair RoPE, an optional clip of Q, K and V), olmo2 (OLMo 2: norms
// after the blocks, RMSNorm of the whole q and k projections, NeoX RoPE) and
// olmoe (OLMoE: olmo2's q/k norms before the blocks, experts), with the keys
// llama.cpp's converter writes.
#include "convert/arch.h"
#include "convert/decoder_rules.h"

namespace ferrite::convert {
namespace {

void olmo_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  p.u32("rope.dimension_count", p.dims.head_dim);
  p.f32("attention.layer_norm_epsilon", 1e-5);  // OLMo's fixed LayerNorm epsilon
  if (auto v = p.opt_float({"clip_qkv"})) p.f32("attention.clamp_kqv", *v);
}

void olmo2_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  p.u32("rope.dimension_count", p.dims.head_dim);
  if (auto n = p.opt_int({"num_experts"})) p.u32("expert_count", *n);
}

// q_norm / k_norm over the whole projection [n_head head_dim], [n_kv head_dim].
void whole_qk_norms(std::vector<TensorRule>& r) {
  r.push_back({"model.layers.{bid}.self_attn.q_norm.weight", "blk.{bid}.attn_q_norm.weight", {Dim::Q}});
  r.push_back({"model.layers.{bid}.self_attn.k_norm.weight", "blk.{bid}.attn_k_norm.weight", {Dim::KV}});
}

ArchDef base(const char* arch, const char* hf_class) {
  ArchDef a;
  a.gguf_arch = arch;
  a.hf_classes = {hf_class};
  a.vocab = vocab_gpt2;
  a.requires_ = {"token_embd.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  return a;
}

}  // namespace

std::vector<ArchDef> olmo_archs() {
  DecoderRuleOptions o;
  o.permute_qk = true;
  ArchDef olmo = base("olmo", "OlmoForCausalLM");
  olmo.params = olmo_params;
  olmo.rules = decoder_rules(o);
  olmo.layer_requires = {{"blk.{bid}.attn_q.weight"}, {"blk.{bid}.attn_k.weight"}, {"blk.{bid}.attn_v.weight"},
                         {"blk.{bid}.attn_output.weight"}, {"blk.{bid}.ffn_up.weight"}, {"blk.{bid}.ffn_down.weight"}};

  DecoderRuleOptions post;
  post.post_norms = true;
  ArchDef olmo2 = base("olmo2", "Olmo2ForCausalLM");
  olmo2.params = olmo2_params;
  olmo2.rules = decoder_rules(post);
  whole_qk_norms(olmo2.rules);
  olmo2.layer_requires = {{"blk.{bid}.attn_q.weight"},        {"blk.{bid}.attn_k.weight"},
                          {"blk.{bid}.attn_v.weight"},        {"blk.{bid}.attn_output.weight"},
                          {"blk.{bid}.attn_q_norm.weight"},   {"blk.{bid}.attn_k_norm.weight"},
                          {"blk.{bid}.post_attention_norm.weight"}, {"blk.{bid}.post_ffw_norm.weight"},
                          {"blk.{bid}.ffn_up.weight"},        {"blk.{bid}.ffn_down.weight"}};
  olmo2.requires_ = {"token_embd.weight", "output_norm.weight"};

  DecoderRuleOptions moe;
  moe.moe = MoeLayout::Qwen;
  ArchDef olmoe = base("olmoe", "OlmoeForCausalLM");
  olmoe.params = olmo2_params;
  olmoe.rules = decoder_rules(moe);
  whole_qk_norms(olmoe.rules);
  olmoe.layer_requires = decoder_layer_requires(moe);
  olmoe.layer_requires.push_back({"blk.{bid}.attn_q_norm.weight"});
  olmoe.layer_requires.push_back({"blk.{bid}.attn_k_norm.weight"});
  olmoe.requires_ = {"token_embd.weight", "output_norm.weight"};
  return {olmo, olmo2, olmoe};
}

}  // namespace ferrite::convert
