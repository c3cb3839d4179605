// The GPT-line checkpoints of issue 27 with the names and keys llama.cpp's
// converter writes (weights are nn.Linear rows: no transposition):
// - phi2 (PhiForCausalLM: Phi-1.5, Phi-2): one LayerNorm feeding attention
//   and the MLP side by side, Q/K/V and output biases, NeoX RoPE over
//   head_dim x partial_rotary_factor dimensions, lm_head with bias;
// - gptj (GPTJForCausalLM): the same block with adjacent-pair RoPE over
//   rotary_dim dimensions, no Q/K/V biases;
// - starcoder (GPTBigCodeForCausalLM: StarCoder, SantaCoder): gpt2's block
//   with learned positions, fused c_attn (multi-query: one K/V head);
// - bloom (BloomForCausalLM): a LayerNorm of the embeddings, fused
//   query_key_value stored per head (q, k, v of each head together:
//   reordered into the q, k, v blocks), ALiBi;
// - mpt (MptForCausalLM): fused Wqkv, LayerNorms without bias, ALiBi with
//   attn_config.alibi_bias_max, Q|K|V clipped to attn_config.clip_qkv.
// The output is tied to the embeddings where the checkpoint has no lm_head.
#include <string>

#include "convert/arch.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

// n_embd, n_head, n_layer and the MLP width of a GPT-line config; n_head_kv:
// the K/V heads (starcoder's multi-query: 1).
void gpt_dims(Params& p, int64_t n_head_kv = 0) {
  Dims& d = p.dims;
  d.n_layer = p.req_int({"n_layer", "num_hidden_layers", "n_layers"});
  d.vocab = p.opt_int({"vocab_size"}).value_or(0);
  d.embd = p.req_int({"n_embd", "hidden_size", "d_model"});
  d.n_head = p.req_int({"n_head", "num_attention_heads", "n_heads"});
  if (d.n_head <= 0 || d.embd % d.n_head != 0) {
    throw ModelError(p.config_path() + ": the width is not a multiple of the head count");
  }
  d.n_head_kv = n_head_kv > 0 ? n_head_kv : p.opt_int({"num_key_value_heads"}).value_or(d.n_head);
  d.head_dim = d.embd / d.n_head;
  d.ff = p.opt_int({"n_inner", "intermediate_size"}).value_or(4 * d.embd);
  d.pos = p.opt_int({"n_positions", "max_position_embeddings"}).value_or(0);
  p.u32("block_count", d.n_layer);
  p.u32("embedding_length", d.embd);
  p.u32("feed_forward_length", d.ff);
  p.u32("attention.head_count", d.n_head);
  p.u32("attention.head_count_kv", d.n_head_kv);
  p.f32("attention.layer_norm_epsilon", p.opt_float({"layer_norm_eps", "layer_norm_epsilon"}).value_or(1e-5));
}

void phi2_params(Params& p) {
  gpt_dims(p);
  p.u32("context_length", p.req_int({"max_position_embeddings", "n_positions"}));
  double partial = p.opt_float({"partial_rotary_factor"}).value_or(0.5);
  if (const Json* rp = json_object(p.files().config, "rope_parameters", p.config_path())) {
    partial = json_number(*rp, "partial_rotary_factor", p.config_path()).value_or(partial);
  }
  p.u32("rope.dimension_count", static_cast<int64_t>(partial * static_cast<double>(p.dims.head_dim)));
  if (auto v = p.rope_theta()) p.f32("rope.freq_base", *v);
}

void gptj_params(Params& p) {
  gpt_dims(p);
  p.u32("context_length", p.req_int({"n_positions"}));
  p.u32("rope.dimension_count", p.req_int({"rotary_dim"}));
}

void starcoder_params(Params& p) {
  const bool mq = p.opt_bool({"multi_query"}).value_or(true);
  gpt_dims(p, mq ? 1 : 0);
  p.u32("context_length", p.req_int({"n_positions"}));
}

void bloom_params(Params& p) {
  gpt_dims(p);
  p.u32("context_length", p.opt_int({"seq_length", "n_positions"}).value_or(2048));
}

void mpt_params(Params& p) {
  gpt_dims(p);
  Dims& d = p.dims;
  // transformers' MptForCausalLM builds a 4 x d_model MLP whatever
  // expansion_ratio says (4 in every released MPT).
  d.ff = 4 * d.embd;
  p.u32("feed_forward_length", d.ff);
  p.u32("context_length", p.req_int({"max_seq_len"}));
  const Json* attn = json_object(p.files().config, "attn_config", p.config_path());
  if (attn != nullptr) {
    const std::string where = p.config_path() + " attn_config";
    if (attn->value("qk_ln", false)) throw ModelError(where + ": qk_ln is not supported");
    if (attn->value("alibi", false)) p.f32("attention.max_alibi_bias", json_number(*attn, "alibi_bias_max", where).value_or(8.0));
    if (auto c = json_number(*attn, "clip_qkv", where)) p.f32("attention.clamp_kqv", *c);
  }
}

ArchDef def(const char* arch, const char* hf_class, std::function<void(Params&)> params,
            std::vector<TensorRule> rules) {
  ArchDef a;
  a.gguf_arch = arch;
  a.hf_classes = {hf_class};
  a.params = std::move(params);
  a.vocab = vocab_gpt2;
  a.rules = std::move(rules);
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"},
                      {"blk.{bid}.attn_qkv.weight", "blk.{bid}.attn_q.weight"},
                      {"blk.{bid}.attn_output.weight"},
                      {"blk.{bid}.ffn_up.weight"},
                      {"blk.{bid}.ffn_down.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq", ".attn.bias", ".attn.masked_bias"};
  return a;
}

}  // namespace

std::vector<ArchDef> gpt_line_archs() {
  using D = Dim;
  ArchDef phi2 = def("phi2", "PhiForCausalLM", phi2_params,
                     {
                         {"model.embed_tokens.weight", "token_embd.weight", {D::Vocab, D::Embd}},
                         {"model.final_layernorm.weight", "output_norm.weight", {D::Embd}},
                         {"model.final_layernorm.bias", "output_norm.bias", {D::Embd}},
                         {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
                         {"lm_head.bias", "output.bias", {D::Vocab}},
                         {"model.layers.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
                         {"model.layers.{bid}.input_layernorm.bias", "blk.{bid}.attn_norm.bias", {D::Embd}},
                         {"model.layers.{bid}.self_attn.q_proj.weight", "blk.{bid}.attn_q.weight", {D::Q, D::Embd}},
                         {"model.layers.{bid}.self_attn.q_proj.bias", "blk.{bid}.attn_q.bias", {D::Q}},
                         {"model.layers.{bid}.self_attn.k_proj.weight", "blk.{bid}.attn_k.weight", {D::KV, D::Embd}},
                         {"model.layers.{bid}.self_attn.k_proj.bias", "blk.{bid}.attn_k.bias", {D::KV}},
                         {"model.layers.{bid}.self_attn.v_proj.weight", "blk.{bid}.attn_v.weight", {D::KV, D::Embd}},
                         {"model.layers.{bid}.self_attn.v_proj.bias", "blk.{bid}.attn_v.bias", {D::KV}},
                         {"model.layers.{bid}.self_attn.dense.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
                         {"model.layers.{bid}.self_attn.dense.bias", "blk.{bid}.attn_output.bias", {D::Embd}},
                         {"model.layers.{bid}.mlp.fc1.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
                         {"model.layers.{bid}.mlp.fc1.bias", "blk.{bid}.ffn_up.bias", {D::FF}},
                         {"model.layers.{bid}.mlp.fc2.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
                         {"model.layers.{bid}.mlp.fc2.bias", "blk.{bid}.ffn_down.bias", {D::Embd}},
                     });
  ArchDef gptj = def("gptj", "GPTJForCausalLM", gptj_params,
                     {
                         {"transformer.wte.weight", "token_embd.weight", {D::Vocab, D::Embd}},
                         {"transformer.ln_f.weight", "output_norm.weight", {D::Embd}},
                         {"transformer.ln_f.bias", "output_norm.bias", {D::Embd}},
                         {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
                         {"lm_head.bias", "output.bias", {D::Vocab}},
                         {"transformer.h.{bid}.ln_1.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
                         {"transformer.h.{bid}.ln_1.bias", "blk.{bid}.attn_norm.bias", {D::Embd}},
                         {"transformer.h.{bid}.attn.q_proj.weight", "blk.{bid}.attn_q.weight", {D::Q, D::Embd}},
                         {"transformer.h.{bid}.attn.k_proj.weight", "blk.{bid}.attn_k.weight", {D::KV, D::Embd}},
                         {"transformer.h.{bid}.attn.v_proj.weight", "blk.{bid}.attn_v.weight", {D::KV, D::Embd}},
                         {"transformer.h.{bid}.attn.out_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
                         {"transformer.h.{bid}.mlp.fc_in.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
                         {"transformer.h.{bid}.mlp.fc_in.bias", "blk.{bid}.ffn_up.bias", {D::FF}},
                         {"transformer.h.{bid}.mlp.fc_out.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
                         {"transformer.h.{bid}.mlp.fc_out.bias", "blk.{bid}.ffn_down.bias", {D::Embd}},
                     });
  // The GPT-2-style block of starcoder, bloom and mpt (transformer.h.N / blocks.N names differ).
  ArchDef starcoder = def("starcoder", "GPTBigCodeForCausalLM", starcoder_params,
                          {
                              {"transformer.wte.weight", "token_embd.weight", {D::Vocab, D::Embd}},
                              {"transformer.wpe.weight", "position_embd.weight", {D::Pos, D::Embd}},
                              {"transformer.ln_f.weight", "output_norm.weight", {D::Embd}},
                              {"transformer.ln_f.bias", "output_norm.bias", {D::Embd}},
                              {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
                              {"transformer.h.{bid}.ln_1.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
                              {"transformer.h.{bid}.ln_1.bias", "blk.{bid}.attn_norm.bias", {D::Embd}},
                              {"transformer.h.{bid}.attn.c_attn.weight", "blk.{bid}.attn_qkv.weight", {D::QKV, D::Embd}},
                              {"transformer.h.{bid}.attn.c_attn.bias", "blk.{bid}.attn_qkv.bias", {D::QKV}},
                              {"transformer.h.{bid}.attn.c_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
                              {"transformer.h.{bid}.attn.c_proj.bias", "blk.{bid}.attn_output.bias", {D::Embd}},
                              {"transformer.h.{bid}.ln_2.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}},
                              {"transformer.h.{bid}.ln_2.bias", "blk.{bid}.ffn_norm.bias", {D::Embd}},
                              {"transformer.h.{bid}.mlp.c_fc.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
                              {"transformer.h.{bid}.mlp.c_fc.bias", "blk.{bid}.ffn_up.bias", {D::FF}},
                              {"transformer.h.{bid}.mlp.c_proj.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
                              {"transformer.h.{bid}.mlp.c_proj.bias", "blk.{bid}.ffn_down.bias", {D::Embd}},
                          });
  ArchDef bloom = def("bloom", "BloomForCausalLM", bloom_params,
                      {
                          {"transformer.word_embeddings.weight", "token_embd.weight", {D::Vocab, D::Embd}},
                          {"transformer.word_embeddings_layernorm.weight", "token_embd_norm.weight", {D::Embd}},
                          {"transformer.word_embeddings_layernorm.bias", "token_embd_norm.bias", {D::Embd}},
                          {"transformer.ln_f.weight", "output_norm.weight", {D::Embd}},
                          {"transformer.ln_f.bias", "output_norm.bias", {D::Embd}},
                          {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
                          {"transformer.h.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
                          {"transformer.h.{bid}.input_layernorm.bias", "blk.{bid}.attn_norm.bias", {D::Embd}},
                          {"transformer.h.{bid}.self_attention.query_key_value.weight", "blk.{bid}.attn_qkv.weight",
                           {D::QKV, D::Embd}, kNeoxQkv},
                          {"transformer.h.{bid}.self_attention.query_key_value.bias", "blk.{bid}.attn_qkv.bias",
                           {D::QKV}, kNeoxQkv},
                          {"transformer.h.{bid}.self_attention.dense.weight", "blk.{bid}.attn_output.weight",
                           {D::Embd, D::Q}},
                          {"transformer.h.{bid}.self_attention.dense.bias", "blk.{bid}.attn_output.bias", {D::Embd}},
                          {"transformer.h.{bid}.post_attention_layernorm.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}},
                          {"transformer.h.{bid}.post_attention_layernorm.bias", "blk.{bid}.ffn_norm.bias", {D::Embd}},
                          {"transformer.h.{bid}.mlp.dense_h_to_4h.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
                          {"transformer.h.{bid}.mlp.dense_h_to_4h.bias", "blk.{bid}.ffn_up.bias", {D::FF}},
                          {"transformer.h.{bid}.mlp.dense_4h_to_h.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
                          {"transformer.h.{bid}.mlp.dense_4h_to_h.bias", "blk.{bid}.ffn_down.bias", {D::Embd}},
                      });
  ArchDef mpt = def("mpt", "MptForCausalLM", mpt_params,
                    {
                        {"transformer.wte.weight", "token_embd.weight", {D::Vocab, D::Embd}},
                        {"transformer.norm_f.weight", "output_norm.weight", {D::Embd}},
                        {"transformer.norm_f.bias", "output_norm.bias", {D::Embd}},
                        {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
                        {"transformer.blocks.{bid}.norm_1.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
                        {"transformer.blocks.{bid}.norm_1.bias", "blk.{bid}.attn_norm.bias", {D::Embd}},
                        {"transformer.blocks.{bid}.attn.Wqkv.weight", "blk.{bid}.attn_qkv.weight", {D::QKV, D::Embd}},
                        {"transformer.blocks.{bid}.attn.Wqkv.bias", "blk.{bid}.attn_qkv.bias", {D::QKV}},
                        {"transformer.blocks.{bid}.attn.out_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
                        {"transformer.blocks.{bid}.attn.out_proj.bias", "blk.{bid}.attn_output.bias", {D::Embd}},
                        {"transformer.blocks.{bid}.norm_2.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}},
                        {"transformer.blocks.{bid}.norm_2.bias", "blk.{bid}.ffn_norm.bias", {D::Embd}},
                        {"transformer.blocks.{bid}.ffn.up_proj.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
                        {"transformer.blocks.{bid}.ffn.up_proj.bias", "blk.{bid}.ffn_up.bias", {D::FF}},
                        {"transformer.blocks.{bid}.ffn.down_proj.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
                        {"transformer.blocks.{bid}.ffn.down_proj.bias", "blk.{bid}.ffn_down.bias", {D::Embd}},
                    });
  return {phi2, gptj, starcoder, bloom, mpt};
}

}  // namespace ferrite::convert
