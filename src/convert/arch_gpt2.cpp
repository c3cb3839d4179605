// gpt2: learned positions, LayerNorms with biases, fused Q|K|V. Its Conv1D
// weights are stored [in, out] and are transposed; the output head is the
// embedding table, written again as output.weight (as llama.cpp does).
// Checkpoints name tensors with or without the "transformer." prefix.
#include "convert/arch.h"

namespace ferrite::convert {
namespace {

void gpt2_params(Params& p) {
  Dims& d = p.dims;
  d.n_layer = p.req_int({"n_layer", "num_hidden_layers"});
  d.embd = p.req_int({"n_embd", "hidden_size"});
  d.n_head = p.req_int({"n_head", "num_attention_heads"});
  d.n_head_kv = d.n_head;
  d.head_dim = d.n_head > 0 ? d.embd / d.n_head : 0;
  d.ff = p.opt_int({"n_inner"}).value_or(4 * d.embd);
  d.pos = p.req_int({"n_ctx", "n_positions"});
  d.vocab = p.opt_int({"vocab_size"}).value_or(0);
  p.u32("block_count", d.n_layer);
  p.u32("context_length", d.pos);
  p.u32("embedding_length", d.embd);
  p.u32("feed_forward_length", d.ff);
  p.u32("attention.head_count", d.n_head);
  p.f32("attention.layer_norm_epsilon", p.req_float({"layer_norm_epsilon"}));
}

}  // namespace

std::vector<ArchDef> gpt2_archs() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "gpt2";
  a.hf_classes = {"GPT2LMHeadModel"};
  a.params = gpt2_params;
  a.vocab = vocab_gpt2;
  // Checkpoint names with the "transformer." prefix removed.
  a.rename = [](const std::string& n) { return n.rfind("transformer.", 0) == 0 ? n.substr(12) : n; };
  a.rules = {
      {"wte.weight", "token_embd.weight", {D::Vocab, D::Embd}, kAlsoOutput},
      {"wpe.weight", "position_embd.weight", {D::Pos, D::Embd}},
      {"ln_f.weight", "output_norm.weight", {D::Embd}},
      {"ln_f.bias", "output_norm.bias", {D::Embd}},
      {"lm_head.weight", "", {D::Vocab, D::Embd}},
      {"h.{bid}.ln_1.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"h.{bid}.ln_1.bias", "blk.{bid}.attn_norm.bias", {D::Embd}},
      {"h.{bid}.attn.c_attn.weight", "blk.{bid}.attn_qkv.weight", {D::Embd, D::QKV}, kTranspose},
      {"h.{bid}.attn.c_attn.bias", "blk.{bid}.attn_qkv.bias", {D::QKV}},
      {"h.{bid}.attn.c_proj.weight", "blk.{bid}.attn_output.weight", {D::Q, D::Embd}, kTranspose},
      {"h.{bid}.attn.c_proj.bias", "blk.{bid}.attn_output.bias", {D::Embd}},
      {"h.{bid}.ln_2.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}},
      {"h.{bid}.ln_2.bias", "blk.{bid}.ffn_norm.bias", {D::Embd}},
      {"h.{bid}.mlp.c_fc.weight", "blk.{bid}.ffn_up.weight", {D::Embd, D::FF}, kTranspose},
      {"h.{bid}.mlp.c_fc.bias", "blk.{bid}.ffn_up.bias", {D::FF}},
      {"h.{bid}.mlp.c_proj.weight", "blk.{bid}.ffn_down.weight", {D::FF, D::Embd}, kTranspose},
      {"h.{bid}.mlp.c_proj.bias", "blk.{bid}.ffn_down.bias", {D::Embd}},
  };
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"}, {"blk.{bid}.attn_qkv.weight"}, {"blk.{bid}.attn_output.weight"},
                      {"blk.{bid}.ffn_norm.weight"},  {"blk.{bid}.ffn_up.weight"},   {"blk.{bid}.ffn_down.weight"}};
  a.requires_ = {"token_embd.weight", "position_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".attn.bias", ".attn.masked_bias"};
  return {a};
}

}  // namespace ferrite::convert
