// phi3: fused Q|K|V and gate|up projections; LongRoPE (or "su", "yarn")
// scaling becomes rope_factors_long/short tensors and an attention factor.
// Phi-4's GPT2Tokenizer is read from tokenizer.json, Phi-3's SentencePiece
// from tokenizer.model.
// phimoe (PhimoeForCausalLM, Phi-3.5-MoE): Mixtral's tensor names with
// LayerNorm biases, Q/K/V/O and lm_head biases (llama.cpp's phimoe names);
// its LongRoPE magnitude is rope_scaling's short_mscale (= long_mscale:
// ferrite has one factor for both), and router_jitter_noise, which sets its
// router's mask, goes to phimoe.router_jitter_noise, a key of ferrite's own.
#include <cmath>
#include <optional>

#include "convert/arch.h"
#include "convert/decoder_rules.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

// Rotated dimensions per head: Phi-4-mini rotates part of each head
// (partial_rotary_factor, top level or in transformers 5's rope_parameters).
int64_t rope_dims(const Params& p) {
  double partial = p.opt_float({"partial_rotary_factor"}).value_or(1.0);
  if (const Json* rp = json_object(p.files().config, "rope_parameters", p.config_path())) {
    partial = json_number(*rp, "partial_rotary_factor", p.config_path()).value_or(partial);
  }
  return static_cast<int64_t>(partial * static_cast<double>(p.dims.embd)) / p.dims.n_head;
}

void phi3_params(Params& p) {
  decoder_dims(p);
  Dims& d = p.dims;
  p.u32("context_length", p.req_int({"n_positions", "max_position_embeddings"}));
  p.u32("rope.scaling.original_context_length", p.req_int({"original_max_position_embeddings"}));
  p.u32("embedding_length", d.embd);
  p.u32("feed_forward_length", p.req_int({"intermediate_size"}));
  p.u32("block_count", d.n_layer);
  p.u32("attention.head_count", d.n_head);
  p.u32("attention.head_count_kv", p.req_int({"num_key_value_heads", "n_head_kv"}));
  p.f32("attention.layer_norm_rms_epsilon", p.req_float({"rms_norm_eps"}));
  p.u32("rope.dimension_count", rope_dims(p));
  p.f32("rope.freq_base", p.rope_theta().value_or(10000.0));
  p.u32("attention.sliding_window", p.opt_int({"sliding_window"}).value_or(0));
}

std::vector<float> factors(const Json& rs, const char* key, int64_t n, const std::string& where) {
  const auto it = rs.find(key);
  if (it == rs.end() || !it->is_array()) throw ModelError(where + ": rope_scaling." + key + " is missing");
  if (static_cast<int64_t>(it->size()) != n) {
    throw ModelError(where + ": rope_scaling." + key + " has " + std::to_string(it->size()) + " values, not " +
                     std::to_string(n));
  }
  std::vector<float> out;
  for (const Json& v : *it) {
    if (!v.is_number()) throw ModelError(where + ": rope_scaling." + key + " holds a non-number");
    out.push_back(v.get<float>());
  }
  return out;
}

// The context LongRoPE was trained for: config.json's
// original_max_position_embeddings, else the rope scaling's.
std::optional<int64_t> original_context(const Params& p, const Json& rs) {
  if (auto v = p.opt_int({"original_max_position_embeddings"})) return v;
  if (auto v = json_number(rs, "original_max_position_embeddings", p.config_path())) {
    if (*v < 1.0 || *v > 1e12) throw ModelError(p.config_path() + ": original_max_position_embeddings is out of range");
    return static_cast<int64_t>(*v);
  }
  return std::nullopt;
}

// phimoe: transformers scales cos and sin by short_mscale (or long_mscale
// past the original context) instead of LongRoPE's factor.
double phimoe_mscale(const Json& rs, const std::string& where) {
  const auto s = json_number(rs, "short_mscale", where), l = json_number(rs, "long_mscale", where);
  if (!s || !l) throw ModelError(where + ": phimoe's rope scaling needs short_mscale and long_mscale");
  if (*s != *l) {
    throw ModelError(where + ": phimoe's short_mscale " + std::to_string(*s) + " and long_mscale " +
                     std::to_string(*l) + " differ (ferrite applies one magnitude factor to both)");
  }
  return *s;
}

std::vector<ExtraTensor> phi3_rope(Params& p) {
  const Json* rs = p.rope_scaling();
  if (rs == nullptr) return {};
  const std::string where = p.config_path();
  const double ctx = static_cast<double>(p.req_int({"n_positions", "max_position_embeddings"}));
  const auto orig_ctx = original_context(p, *rs);
  if (!orig_ctx) throw ModelError(where + ": original_max_position_embeddings is missing");
  const double orig = static_cast<double>(*orig_ctx);
  const double scale = ctx / orig;
  const std::string type = rs->value("type", rs->value("rope_type", std::string()));
  double attn = 1.0;
  if (p.arch() == "phimoe" && (type == "su" || type == "longrope")) {
    attn = phimoe_mscale(*rs, where);
  } else if (type == "su" || type == "longrope") {
    if (scale > 1.0) attn = std::sqrt(1.0 + std::log(scale) / std::log(orig));
  } else if (type == "yarn") {
    if (scale > 1.0) attn = 0.1 * std::log(scale) + 1.0;
  } else {
    throw ModelError(where + ": phi3 rope scaling '" + type + "' is not supported (su, longrope, yarn)");
  }
  p.f32("rope.scaling.attn_factor", attn);
  const int64_t half = rope_dims(p) / 2;
  return {ExtraTensor{"rope_factors_long.weight", factors(*rs, "long_factor", half, where), {half}},
          ExtraTensor{"rope_factors_short.weight", factors(*rs, "short_factor", half, where), {half}}};
}

VocabKeys phi3_vocab(const HfFiles& f, int64_t vocab_size, const VocabOptions& opt) {
  if (f.tokenizer_config && f.tokenizer_config->value("tokenizer_class", std::string()) == "GPT2Tokenizer") {
    return vocab_gpt2(f, vocab_size, opt);
  }
  return vocab_sentencepiece(f, vocab_size, /*phi3_added_tokens=*/true);
}

void phimoe_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  const int64_t ctx = p.req_int({"max_position_embeddings"});
  const Json* rs = p.rope_scaling();
  p.u32("rope.scaling.original_context_length", (rs ? original_context(p, *rs) : std::nullopt).value_or(ctx));
  p.u32("rope.dimension_count", rope_dims(p));
  p.u32("attention.sliding_window", p.opt_int({"sliding_window"}).value_or(0));
  const double jitter = p.opt_float({"router_jitter_noise"}).value_or(0.01);
  if (!std::isfinite(jitter) || jitter < 0.0) {
    throw ModelError(p.config_path() + ": router_jitter_noise " + std::to_string(jitter) + " is not >= 0");
  }
  p.f32("router_jitter_noise", jitter);
}

// Phi-3.5-MoE's SentencePiece tokenizer.model (Phi-3's added tokens), else tokenizer.json's BPE.
VocabKeys phimoe_vocab(const HfFiles& f, int64_t vocab_size, const VocabOptions& opt) {
  if (f.has("tokenizer.model")) return vocab_sentencepiece(f, vocab_size, /*phi3_added_tokens=*/true);
  return vocab_gpt2(f, vocab_size, opt);
}

ArchDef phimoe_arch() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "phimoe";
  a.hf_classes = {"PhimoeForCausalLM"};
  a.params = phimoe_params;
  a.vocab = phimoe_vocab;
  DecoderRuleOptions o;
  o.moe = MoeLayout::Mixtral;
  a.rules = decoder_rules(o);
  a.rules.push_back({"lm_head.bias", "output.bias", {D::Vocab}});
  a.rules.push_back({"model.norm.bias", "output_norm.bias", {D::Embd}});
  a.rules.push_back({"model.layers.{bid}.input_layernorm.bias", "blk.{bid}.attn_norm.bias", {D::Embd}});
  a.rules.push_back({"model.layers.{bid}.post_attention_layernorm.bias", "blk.{bid}.ffn_norm.bias", {D::Embd}});
  a.layer_requires = decoder_layer_requires(o);
  a.layer_requires.push_back({"blk.{bid}.ffn_gate_inp.weight"});
  a.requires_ = {"token_embd.weight", "output_norm.weight", "output.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  a.extra = phi3_rope;
  return a;
}

}  // namespace

std::vector<ArchDef> phi3_archs() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "phi3";
  a.hf_classes = {"Phi3ForCausalLM"};
  a.params = phi3_params;
  a.vocab = phi3_vocab;
  a.rules = {
      {"model.embed_tokens.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"model.norm.weight", "output_norm.weight", {D::Embd}},
      {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
      {"model.layers.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.self_attn.qkv_proj.weight", "blk.{bid}.attn_qkv.weight", {D::QKV, D::Embd}},
      {"model.layers.{bid}.self_attn.o_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
      {"model.layers.{bid}.post_attention_layernorm.weight", "blk.{bid}.ffn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.mlp.gate_up_proj.weight", "blk.{bid}.ffn_up.weight", {D::FF2, D::Embd}},
      {"model.layers.{bid}.mlp.down_proj.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
  };
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"}, {"blk.{bid}.attn_qkv.weight"}, {"blk.{bid}.attn_output.weight"},
                      {"blk.{bid}.ffn_norm.weight"},  {"blk.{bid}.ffn_up.weight"},   {"blk.{bid}.ffn_down.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight", "output.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  a.extra = phi3_rope;
  return {a, phimoe_arch()};
}

}  // namespace ferrite::convert
