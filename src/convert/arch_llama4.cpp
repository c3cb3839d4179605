// llama4 (Llama4ForCausalLM, the text model of Llama 4 Scout / Maverick):
// pairs as stored (HF's Llama 4 rotates interleaved pairs: no reordering,
// as llama.cpp's converter leaves them), experts every
// interleave_moe_layer_step layers stored fused and transposed,
// feed_forward.experts.gate_up_proj [E, n, 2 ff] (each expert's matrix
// transposed, then split into ffn_gate_exps and ffn_up_exps) and down_proj
// [E, ff, n], a shared expert beside them, dense layers of
// intermediate_size_mlp, chunked attention (attention_chunk_size), the
// attention temperature of the layers without RoPE (floor_scale,
// attn_scale), Llama 3.1's rope_freqs when rope_scaling says "llama3".
// The engine norms q and k on the RoPE layers unless there are 128 experts
// (llama.cpp's rule for Maverick); a config whose use_qk_norm disagrees, or
// whose no_rope_layers is not every fourth layer, is refused.
#include <string>

#include "convert/arch.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

constexpr int64_t kNoRopeStep = 4, kMaverickExperts = 128;

void llama4_params(Params& p) {
  decoder_dims(p);
  Dims& d = p.dims;
  d.ff_exp = d.ff;  // intermediate_size: the experts' and the shared expert's width
  d.ff_shexp = d.ff;
  const int64_t ff_dense = p.opt_int({"intermediate_size_mlp"}).value_or(d.ff);
  base_params(p);
  const std::string where = p.config_path();
  p.u32("feed_forward_length", ff_dense);
  p.u32("expert_feed_forward_length", d.ff);
  p.u32("expert_count", d.experts);
  p.u32("interleave_moe_layer_step", p.opt_int({"interleave_moe_layer_step"}).value_or(1));
  p.u32("rope.dimension_count", d.head_dim);
  if (auto c = p.opt_int({"attention_chunk_size"})) p.u32("attention.chunk_size", *c);
  if (auto f = p.opt_float({"floor_scale"})) p.f32("attention.temperature_length", *f);
  if (auto s = p.opt_float({"attn_scale"})) p.f32("attention.temperature_scale", *s);
  const bool qk_norm = p.opt_bool({"use_qk_norm"}).value_or(true);
  if (qk_norm != (d.experts != kMaverickExperts)) {
    throw ModelError(where + ": use_qk_norm " + (qk_norm ? "true" : "false") + " with " + std::to_string(d.experts) +
                     " experts (ferrite norms q and k unless there are 128)");
  }
  require_no_rope_every(p, kNoRopeStep);
}

}  // namespace

std::vector<ArchDef> llama4_archs() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "llama4";
  a.hf_classes = {"Llama4ForCausalLM"};
  a.params = llama4_params;
  a.vocab = vocab_gpt2;
  a.rename = [](const std::string& n) {  // the multimodal checkpoint's text model
    return n.rfind("language_model.", 0) == 0 ? n.substr(15) : n;
  };
  a.rules = {
      {"model.embed_tokens.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"model.norm.weight", "output_norm.weight", {D::Embd}},
      {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
      {"model.layers.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.post_attention_layernorm.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.self_attn.q_proj.weight", "blk.{bid}.attn_q.weight", {D::Q, D::Embd}},
      {"model.layers.{bid}.self_attn.k_proj.weight", "blk.{bid}.attn_k.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.v_proj.weight", "blk.{bid}.attn_v.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.o_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
      {"model.layers.{bid}.feed_forward.gate_proj.weight", "blk.{bid}.ffn_gate.weight", {D::Any, D::Embd}},
      {"model.layers.{bid}.feed_forward.up_proj.weight", "blk.{bid}.ffn_up.weight", {D::Any, D::Embd}},
      {"model.layers.{bid}.feed_forward.down_proj.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::Any}},
      {"model.layers.{bid}.feed_forward.router.weight", "blk.{bid}.ffn_gate_inp.weight", {D::Experts, D::Embd}},
      {"model.layers.{bid}.feed_forward.experts.gate_up_proj", "blk.{bid}.ffn_gate_exps.weight",
       {D::Experts, D::Embd, D::FF2}, kTranspose | kSplitGateUp},
      {"model.layers.{bid}.feed_forward.experts.down_proj", "blk.{bid}.ffn_down_exps.weight",
       {D::Experts, D::FFExp, D::Embd}, kTranspose},
      {"model.layers.{bid}.feed_forward.shared_expert.gate_proj.weight", "blk.{bid}.ffn_gate_shexp.weight",
       {D::FFShexp, D::Embd}},
      {"model.layers.{bid}.feed_forward.shared_expert.up_proj.weight", "blk.{bid}.ffn_up_shexp.weight",
       {D::FFShexp, D::Embd}},
      {"model.layers.{bid}.feed_forward.shared_expert.down_proj.weight", "blk.{bid}.ffn_down_shexp.weight",
       {D::Embd, D::FFShexp}},
  };
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"},   {"blk.{bid}.attn_q.weight"},  {"blk.{bid}.attn_output.weight"},
                      {"blk.{bid}.ffn_norm.weight"},
                      {"blk.{bid}.ffn_down.weight", "blk.{bid}.ffn_down_exps.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  a.drop_prefixes = {"vision_model.", "multi_modal_projector."};
  a.extra = llama3_rope_freqs;
  return {a};
}

}  // namespace ferrite::convert
