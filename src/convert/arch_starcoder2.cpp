// starcoder2: a Llama-style decoder with LayerNorms and biases everywhere
// and a GELU feed-forward (mlp.c_fc, mlp.c_proj).
#include "convert/arch.h"

namespace ferrite::convert {
namespace {

void starcoder2_params(Params& p) {
  decoder_dims(p);
  base_params(p);
}

}  // namespace

std::vector<ArchDef> starcoder2_archs() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "starcoder2";
  a.hf_classes = {"Starcoder2ForCausalLM"};
  a.params = starcoder2_params;
  a.vocab = vocab_gpt2;
  a.rules = {
      {"model.embed_tokens.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"model.norm.weight", "output_norm.weight", {D::Embd}},
      {"model.norm.bias", "output_norm.bias", {D::Embd}},
      {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
      {"model.layers.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.input_layernorm.bias", "blk.{bid}.attn_norm.bias", {D::Embd}},
      {"model.layers.{bid}.self_attn.q_proj.weight", "blk.{bid}.attn_q.weight", {D::Q, D::Embd}},
      {"model.layers.{bid}.self_attn.k_proj.weight", "blk.{bid}.attn_k.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.v_proj.weight", "blk.{bid}.attn_v.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.o_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
      {"model.layers.{bid}.self_attn.q_proj.bias", "blk.{bid}.attn_q.bias", {D::Q}},
      {"model.layers.{bid}.self_attn.k_proj.bias", "blk.{bid}.attn_k.bias", {D::KV}},
      {"model.layers.{bid}.self_attn.v_proj.bias", "blk.{bid}.attn_v.bias", {D::KV}},
      {"model.layers.{bid}.self_attn.o_proj.bias", "blk.{bid}.attn_output.bias", {D::Embd}},
      {"model.layers.{bid}.post_attention_layernorm.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.post_attention_layernorm.bias", "blk.{bid}.ffn_norm.bias", {D::Embd}},
      {"model.layers.{bid}.mlp.c_fc.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
      {"model.layers.{bid}.mlp.c_fc.bias", "blk.{bid}.ffn_up.bias", {D::FF}},
      {"model.layers.{bid}.mlp.c_proj.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
      {"model.layers.{bid}.mlp.c_proj.bias", "blk.{bid}.ffn_down.bias", {D::Embd}},
  };
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"},   {"blk.{bid}.attn_q.weight"},  {"blk.{bid}.attn_k.weight"},
                      {"blk.{bid}.attn_v.weight"},      {"blk.{bid}.attn_output.weight"},
                      {"blk.{bid}.ffn_norm.weight"},    {"blk.{bid}.ffn_up.weight"},  {"blk.{bid}.ffn_down.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  return {a};
}

}  // namespace ferrite::convert
