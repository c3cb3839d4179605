// t5 (T5ForConditionalGeneration: T5, t5 v1.1, flan-t5, mT5) in llama.cpp's
// layout (enc.blk.N.*, dec.blk.N.*; src/model/arch_t5.cpp runs it): both
// stacks' self-attention (q, k, v, o; layer 0's relative_attention_bias ->
// attn_rel_b), the decoder's cross-attention (EncDecAttention ->
// cross_attn_*), the feed-forward (DenseReluDense.wi -> ffn_up, or the gated
// wi_0 -> ffn_gate and wi_1 -> ffn_up; wo -> ffn_down) and the RMSNorms.
// The token table is shared.weight (encoder./decoder.embed_tokens copies are
// dropped). Keys as llama.cpp writes them: context_length (n_positions, else
// 512), attention.relative_buckets_count, decoder_start_token_id, both
// epsilons from layer_norm_epsilon.
//
// The output head: transformers multiplies the decoder's output by
// d_model^-0.5 before lm_head when config.json says scale_decoder_outputs
// (transformers 5), or, in configs without that key, tie_word_embeddings
// (default true: t5-small and friends). The engine, as llama.cpp, applies no
// such factor, so the converter folds it into output.weight (lm_head.weight,
// or a scaled copy of the token table when the head is tied). llama.cpp's
// converter writes the head unscaled: its logits of such models are
// d_model^0.5 times transformers' (the same greedy tokens).
//
// Refused: feed-forwards other than ReLU and gated tanh-GELU ("relu",
// "gated-gelu"/"gelu_new"), decoders with another layer count than the
// encoder, relative_attention_max_distance other than 128 (the engine's).
#include <array>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "convert/arch.h"
#include "convert/tensor_plan.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

constexpr int64_t kMaxDistance = 128;  // cpu/attention/rel_pos_bias.h's kRelMaxDistance

bool scales_decoder_output(const Params& p) {
  if (auto s = p.opt_bool({"scale_decoder_outputs"})) return *s;
  return p.opt_bool({"tie_word_embeddings"}).value_or(true);
}

void require_ffn_kind(const Params& p) {
  const Json& c = p.files().config;
  const std::string proj = c.value("feed_forward_proj", std::string("relu"));
  const bool gated = proj.rfind("gated-", 0) == 0;
  const std::string act = c.value("dense_act_fn", gated ? proj.substr(6) : proj);
  const bool ok = gated ? (act == "gelu_new" || act == "gelu_pytorch_tanh") : act == "relu";
  if (!ok) {
    throw ModelError(p.config_path() + ": feed_forward_proj '" + proj + "' (dense_act_fn '" + act +
                     "') is not supported: t5 runs ReLU or gated tanh-GELU (gelu_new) feed-forwards");
  }
}

void t5_params(Params& p) {
  Dims& d = p.dims;
  d.n_layer = p.req_int({"num_layers"});
  if (auto dec = p.opt_int({"num_decoder_layers"}); dec && *dec != d.n_layer) {
    throw ModelError(p.config_path() + ": num_decoder_layers " + std::to_string(*dec) + " differs from num_layers " +
                     std::to_string(d.n_layer) + " (t5 runs stacks of one depth)");
  }
  d.vocab = p.opt_int({"vocab_size"}).value_or(0);
  d.embd = p.req_int({"d_model"});
  d.n_head = d.n_head_kv = p.req_int({"num_heads"});
  d.head_dim = p.req_int({"d_kv"});
  d.ff = p.req_int({"d_ff"});
  if (d.n_head == 0 || d.head_dim == 0) throw ModelError(p.config_path() + ": num_heads and d_kv must be positive");
  if (const int64_t m = p.opt_int({"relative_attention_max_distance"}).value_or(kMaxDistance); m != kMaxDistance) {
    throw ModelError(p.config_path() + ": relative_attention_max_distance " + std::to_string(m) +
                     " is not supported (128)");
  }
  require_ffn_kind(p);
  p.u32("context_length", p.opt_int({"n_positions"}).value_or(512));
  p.u32("embedding_length", d.embd);
  p.u32("feed_forward_length", d.ff);
  p.u32("block_count", d.n_layer);
  p.u32("attention.head_count", d.n_head);
  p.u32("attention.key_length", d.head_dim);
  p.u32("attention.value_length", d.head_dim);
  const double eps = p.opt_float({"layer_norm_epsilon"}).value_or(1e-6);
  p.f32("attention.layer_norm_epsilon", eps);
  p.u32("attention.relative_buckets_count", p.opt_int({"relative_attention_num_buckets"}).value_or(32));
  p.f32("attention.layer_norm_rms_epsilon", eps);
  p.u32("decoder_start_token_id", p.opt_int({"decoder_start_token_id"}).value_or(0));
  if (scales_decoder_output(p)) {
    p.notes.push_back("output.weight holds the head times d_model^-0.5 (transformers' scaling of the decoder output)");
  }
}

// output.weight := (lm_head.weight or the token table) * d_model^-0.5 when transformers scales.
void t5_output(std::vector<PlannedTensor>& planned, const Params& p) {
  if (!scales_decoder_output(p)) return;
  auto find = [&](const char* name) -> PlannedTensor* {
    for (PlannedTensor& t : planned) {
      if (t.name == name) return &t;
    }
    return nullptr;
  };
  if (find("output.weight") == nullptr) {
    const PlannedTensor* embd = find("token_embd.weight");
    if (embd == nullptr) throw ModelError("the checkpoint has no tensor for token_embd.weight");
    PlannedTensor copy = *embd;
    copy.name = "output.weight";
    planned.push_back(std::move(copy));
  }
  find("output.weight")->scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.dims.embd)));
}

// The rules of one stack's self-attention, its norm and feed-forward.
void add_stack(std::vector<TensorRule>& r, bool decoder) {
  using D = Dim;
  // String literals for the rule table: each pattern lives as long as the program.
  static const char* const kEnc[][2] = {
      {"encoder.block.{bid}.layer.0.SelfAttention.q.weight", "enc.blk.{bid}.attn_q.weight"},
      {"encoder.block.{bid}.layer.0.SelfAttention.k.weight", "enc.blk.{bid}.attn_k.weight"},
      {"encoder.block.{bid}.layer.0.SelfAttention.v.weight", "enc.blk.{bid}.attn_v.weight"},
      {"encoder.block.{bid}.layer.0.SelfAttention.o.weight", "enc.blk.{bid}.attn_o.weight"},
      {"encoder.block.{bid}.layer.0.SelfAttention.relative_attention_bias.weight", "enc.blk.{bid}.attn_rel_b.weight"},
      {"encoder.block.{bid}.layer.0.layer_norm.weight", "enc.blk.{bid}.attn_norm.weight"},
      {"encoder.block.{bid}.layer.1.DenseReluDense.wi.weight", "enc.blk.{bid}.ffn_up.weight"},
      {"encoder.block.{bid}.layer.1.DenseReluDense.wi_0.weight", "enc.blk.{bid}.ffn_gate.weight"},
      {"encoder.block.{bid}.layer.1.DenseReluDense.wi_1.weight", "enc.blk.{bid}.ffn_up.weight"},
      {"encoder.block.{bid}.layer.1.DenseReluDense.wo.weight", "enc.blk.{bid}.ffn_down.weight"},
      {"encoder.block.{bid}.layer.1.layer_norm.weight", "enc.blk.{bid}.ffn_norm.weight"},
  };
  static const char* const kDec[][2] = {
      {"decoder.block.{bid}.layer.0.SelfAttention.q.weight", "dec.blk.{bid}.attn_q.weight"},
      {"decoder.block.{bid}.layer.0.SelfAttention.k.weight", "dec.blk.{bid}.attn_k.weight"},
      {"decoder.block.{bid}.layer.0.SelfAttention.v.weight", "dec.blk.{bid}.attn_v.weight"},
      {"decoder.block.{bid}.layer.0.SelfAttention.o.weight", "dec.blk.{bid}.attn_o.weight"},
      {"decoder.block.{bid}.layer.0.SelfAttention.relative_attention_bias.weight", "dec.blk.{bid}.attn_rel_b.weight"},
      {"decoder.block.{bid}.layer.0.layer_norm.weight", "dec.blk.{bid}.attn_norm.weight"},
      {"decoder.block.{bid}.layer.2.DenseReluDense.wi.weight", "dec.blk.{bid}.ffn_up.weight"},
      {"decoder.block.{bid}.layer.2.DenseReluDense.wi_0.weight", "dec.blk.{bid}.ffn_gate.weight"},
      {"decoder.block.{bid}.layer.2.DenseReluDense.wi_1.weight", "dec.blk.{bid}.ffn_up.weight"},
      {"decoder.block.{bid}.layer.2.DenseReluDense.wo.weight", "dec.blk.{bid}.ffn_down.weight"},
      {"decoder.block.{bid}.layer.2.layer_norm.weight", "dec.blk.{bid}.ffn_norm.weight"},
  };
  // Shapes in the order of the tables above.
  static const std::array<Dim, 3> kShapes[] = {
      {D::Q, D::Embd}, {D::Q, D::Embd},  {D::Q, D::Embd},  {D::Embd, D::Q}, {D::Any, D::Any},
      {D::Embd},       {D::FF, D::Embd}, {D::FF, D::Embd}, {D::FF, D::Embd}, {D::Embd, D::FF}, {D::Embd}};
  const auto& table = decoder ? kDec : kEnc;
  for (size_t i = 0; i < std::size(kEnc); ++i) r.push_back({table[i][0], table[i][1], kShapes[i]});
}

}  // namespace

std::vector<ArchDef> t5_archs() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "t5";
  a.hf_classes = {"T5ForConditionalGeneration"};
  a.params = t5_params;
  a.vocab = vocab_t5;
  a.rules = {
      {"shared.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"encoder.embed_tokens.weight", "", {D::Vocab, D::Embd}},
      {"decoder.embed_tokens.weight", "", {D::Vocab, D::Embd}},
      {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
      {"encoder.final_layer_norm.weight", "enc.output_norm.weight", {D::Embd}},
      {"decoder.final_layer_norm.weight", "dec.output_norm.weight", {D::Embd}},
      {"decoder.block.{bid}.layer.1.EncDecAttention.q.weight", "dec.blk.{bid}.cross_attn_q.weight", {D::Q, D::Embd}},
      {"decoder.block.{bid}.layer.1.EncDecAttention.k.weight", "dec.blk.{bid}.cross_attn_k.weight", {D::Q, D::Embd}},
      {"decoder.block.{bid}.layer.1.EncDecAttention.v.weight", "dec.blk.{bid}.cross_attn_v.weight", {D::Q, D::Embd}},
      {"decoder.block.{bid}.layer.1.EncDecAttention.o.weight", "dec.blk.{bid}.cross_attn_o.weight", {D::Embd, D::Q}},
      {"decoder.block.{bid}.layer.1.layer_norm.weight", "dec.blk.{bid}.cross_attn_norm.weight", {D::Embd}},
  };
  add_stack(a.rules, false);
  add_stack(a.rules, true);
  a.layer_requires = {{"enc.blk.{bid}.attn_q.weight"}, {"enc.blk.{bid}.attn_o.weight"},
                      {"enc.blk.{bid}.ffn_up.weight"},  {"enc.blk.{bid}.ffn_down.weight"},
                      {"dec.blk.{bid}.attn_q.weight"}, {"dec.blk.{bid}.cross_attn_q.weight"},
                      {"dec.blk.{bid}.ffn_up.weight"},  {"dec.blk.{bid}.ffn_down.weight"}};
  a.requires_ = {"token_embd.weight", "enc.output_norm.weight", "dec.output_norm.weight",
                 "enc.blk.0.attn_rel_b.weight", "dec.blk.0.attn_rel_b.weight"};
  a.finish = t5_output;
  return {a};
}

}  // namespace ferrite::convert
