// gptneox: parallel residual, LayerNorms with biases, fused Q|K|V stored per
// head (q, k, v of head 0, then head 1, ...) and reordered into q, k, v
// blocks; RoPE on rotary_pct of each head.
#include "convert/arch.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

// rotary_pct, or the partial_rotary_factor of later configs.
double rotary_fraction(const Params& p) {
  if (auto v = p.opt_float({"rotary_pct", "partial_rotary_factor"})) return *v;
  if (const Json* rp = json_object(p.files().config, "rope_parameters", p.config_path())) {
    if (auto v = json_number(*rp, "partial_rotary_factor", p.config_path())) return *v;
  }
  return 0.25;  // GPTNeoXConfig's default
}

void gptneox_params(Params& p) {
  decoder_dims(p);
  Dims& d = p.dims;
  d.n_head_kv = d.n_head;
  p.u32("context_length", p.req_int({"max_position_embeddings"}));
  p.u32("embedding_length", d.embd);
  p.u32("block_count", d.n_layer);
  p.u32("feed_forward_length", p.req_int({"intermediate_size"}));
  const double frac = rotary_fraction(p);
  if (!(frac > 0.0 && frac <= 1.0)) throw ModelError(p.config_path() + ": rotary_pct must be in (0, 1]");
  p.u32("rope.dimension_count", static_cast<int64_t>(frac * static_cast<double>(d.embd / d.n_head)));
  if (auto theta = p.rope_theta()) p.f32("rope.freq_base", *theta);
  p.u32("attention.head_count", d.n_head);
  p.boolean("use_parallel_residual", p.opt_bool({"use_parallel_residual"}).value_or(true));
  p.f32("attention.layer_norm_epsilon", p.req_float({"layer_norm_eps"}));
}

}  // namespace

std::vector<ArchDef> gptneox_archs() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "gptneox";
  a.hf_classes = {"GPTNeoXForCausalLM"};
  a.params = gptneox_params;
  a.vocab = vocab_gpt2;
  a.rules = {
      {"gpt_neox.embed_in.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"gpt_neox.final_layer_norm.weight", "output_norm.weight", {D::Embd}},
      {"gpt_neox.final_layer_norm.bias", "output_norm.bias", {D::Embd}},
      {"embed_out.weight", "output.weight", {D::Vocab, D::Embd}},
      {"gpt_neox.layers.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"gpt_neox.layers.{bid}.input_layernorm.bias", "blk.{bid}.attn_norm.bias", {D::Embd}},
      {"gpt_neox.layers.{bid}.attention.query_key_value.weight", "blk.{bid}.attn_qkv.weight", {D::QKV, D::Embd},
       kNeoxQkv},
      {"gpt_neox.layers.{bid}.attention.query_key_value.bias", "blk.{bid}.attn_qkv.bias", {D::QKV}, kNeoxQkv},
      {"gpt_neox.layers.{bid}.attention.dense.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
      {"gpt_neox.layers.{bid}.attention.dense.bias", "blk.{bid}.attn_output.bias", {D::Embd}},
      {"gpt_neox.layers.{bid}.post_attention_layernorm.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}},
      {"gpt_neox.layers.{bid}.post_attention_layernorm.bias", "blk.{bid}.ffn_norm.bias", {D::Embd}},
      {"gpt_neox.layers.{bid}.mlp.dense_h_to_4h.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
      {"gpt_neox.layers.{bid}.mlp.dense_h_to_4h.bias", "blk.{bid}.ffn_up.bias", {D::FF}},
      {"gpt_neox.layers.{bid}.mlp.dense_4h_to_h.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
      {"gpt_neox.layers.{bid}.mlp.dense_4h_to_h.bias", "blk.{bid}.ffn_down.bias", {D::Embd}},
  };
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"}, {"blk.{bid}.attn_qkv.weight"}, {"blk.{bid}.attn_output.weight"},
                      {"blk.{bid}.ffn_norm.weight"},  {"blk.{bid}.ffn_up.weight"},   {"blk.{bid}.ffn_down.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq"};
  return {a};
}

}  // namespace ferrite::convert
