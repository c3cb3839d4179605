// falcon (7B style: one norm, multi-query attention; 40B style
// "new_decoder_architecture": ln_attn and ln_mlp, grouped KV heads). The
// fused Q|K|V is stored per KV group (its queries, then k, then v) and is
// reordered into q, k, v blocks as llama.cpp's "jploski" layout.
//
// The KV head count follows transformers' own reading of the config: 1 with
// multi_query, every head without it, num_kv_heads in the new architecture.
// (llama.cpp reads num_kv_heads alone, which a config re-saved by
// transformers sets to the head count even for multi-query models.)
#include "convert/arch.h"

namespace ferrite::convert {
namespace {

void falcon_params(Params& p) {
  Dims& d = p.dims;
  d.n_layer = p.req_int({"num_hidden_layers", "n_layer"});
  d.n_head = p.req_int({"num_attention_heads", "n_head"});
  d.embd = p.req_int({"hidden_size"});
  const bool new_arch = p.opt_bool({"new_decoder_architecture"}).value_or(false);
  if (new_arch) {
    d.n_head_kv = p.opt_int({"num_kv_heads", "n_head_kv"}).value_or(1);
  } else if (p.opt_bool({"multi_query"}).value_or(true)) {
    d.n_head_kv = 1;
  } else {
    d.n_head_kv = d.n_head;
  }
  d.head_dim = d.n_head > 0 ? d.embd / d.n_head : 0;
  d.ff = p.opt_int({"ffn_hidden_size"}).value_or(4 * d.embd);
  d.vocab = p.opt_int({"vocab_size"}).value_or(0);
  p.u32("context_length", p.opt_int({"max_position_embeddings"}).value_or(2048));
  p.str("tensor_data_layout", "jploski");
  p.u32("embedding_length", d.embd);
  p.u32("feed_forward_length", d.ff);
  p.u32("block_count", d.n_layer);
  p.u32("attention.head_count", d.n_head);
  p.u32("attention.head_count_kv", d.n_head_kv);
  p.f32("attention.layer_norm_epsilon", p.req_float({"layer_norm_epsilon"}));
  if (auto theta = p.rope_theta()) p.f32("rope.freq_base", *theta);
}

}  // namespace

std::vector<ArchDef> falcon_archs() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "falcon";
  a.hf_classes = {"FalconForCausalLM", "RWForCausalLM"};
  a.params = falcon_params;
  a.vocab = vocab_gpt2;
  a.rules = {
      {"transformer.word_embeddings.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"transformer.ln_f.weight", "output_norm.weight", {D::Embd}},
      {"transformer.ln_f.bias", "output_norm.bias", {D::Embd}},
      {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
      {"transformer.h.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"transformer.h.{bid}.input_layernorm.bias", "blk.{bid}.attn_norm.bias", {D::Embd}},
      {"transformer.h.{bid}.ln_mlp.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"transformer.h.{bid}.ln_mlp.bias", "blk.{bid}.attn_norm.bias", {D::Embd}},
      {"transformer.h.{bid}.ln_attn.weight", "blk.{bid}.attn_norm_2.weight", {D::Embd}},
      {"transformer.h.{bid}.ln_attn.bias", "blk.{bid}.attn_norm_2.bias", {D::Embd}},
      {"transformer.h.{bid}.self_attention.query_key_value.weight", "blk.{bid}.attn_qkv.weight",
       {D::QKV, D::Embd}, kFalconQkv},
      {"transformer.h.{bid}.self_attention.query_key_value.bias", "blk.{bid}.attn_qkv.bias", {D::QKV}, kFalconQkv},
      {"transformer.h.{bid}.self_attention.dense.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
      {"transformer.h.{bid}.self_attention.dense.bias", "blk.{bid}.attn_output.bias", {D::Embd}},
      {"transformer.h.{bid}.mlp.dense_h_to_4h.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
      {"transformer.h.{bid}.mlp.dense_h_to_4h.bias", "blk.{bid}.ffn_up.bias", {D::FF}},
      {"transformer.h.{bid}.mlp.dense_4h_to_h.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
      {"transformer.h.{bid}.mlp.dense_4h_to_h.bias", "blk.{bid}.ffn_down.bias", {D::Embd}},
  };
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"}, {"blk.{bid}.attn_qkv.weight"}, {"blk.{bid}.attn_output.weight"},
                      {"blk.{bid}.ffn_up.weight"},    {"blk.{bid}.ffn_down.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  return {a};
}

}  // namespace ferrite::convert
