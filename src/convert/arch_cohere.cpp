// command-r (CohereForCausalLM: Command-R) and cohere2 (Cohere2ForCausalLM:
// Command R7B, Command A): one LayerNorm (weight only) feeding attention and
// the MLP side by side, adjacent-pair RoPE as stored (no reordering), the
// output tied to the embeddings and scaled by logit_scale. cohere2 attends
// within attention.sliding_window on three layers of every four and
// globally on the fourth, the pattern ferrite's cohere2 runs: another
// pattern in config.json is refused. Command R+'s per-head q/k norms
// (use_qk_norm) are refused, as the engine refuses them.
#include <string>

#include "convert/arch.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

constexpr int64_t kPattern = 4;

void cohere_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  if (p.opt_bool({"use_qk_norm"}).value_or(false)) {
    throw ModelError(p.config_path() + ": use_qk_norm (Command R+'s per-head q/k norms) is not supported");
  }
  if (auto v = p.opt_float({"logit_scale"})) p.f32("logit_scale", *v);
}

void cohere2_params(Params& p) {
  cohere_params(p);
  p.u32("attention.sliding_window", p.req_int({"sliding_window"}));
  const Json& c = p.files().config;
  if (c.contains("layer_types") && c["layer_types"].is_array()) {
    const Json& t = c["layer_types"];
    for (size_t i = 0; i < t.size(); ++i) {
      const bool sliding = t[i].is_string() && t[i].get<std::string>() == "sliding_attention";
      if (sliding != (static_cast<int64_t>(i) % kPattern < kPattern - 1)) {
        throw ModelError(p.config_path() + ": layer_types is not three sliding layers then one global, repeated");
      }
    }
  } else if (p.opt_int({"sliding_window_pattern"}).value_or(kPattern) != kPattern) {
    throw ModelError(p.config_path() + ": sliding_window_pattern other than 4 is not supported");
  }
}

ArchDef cohere(const char* arch, const char* hf_class, bool v2) {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = arch;
  a.hf_classes = {hf_class};
  a.params = v2 ? cohere2_params : cohere_params;
  a.vocab = vocab_gpt2;
  a.rules = {
      {"model.embed_tokens.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"model.norm.weight", "output_norm.weight", {D::Embd}},
      {"model.layers.{bid}.input_layernorm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {"model.layers.{bid}.self_attn.q_proj.weight", "blk.{bid}.attn_q.weight", {D::Q, D::Embd}},
      {"model.layers.{bid}.self_attn.k_proj.weight", "blk.{bid}.attn_k.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.v_proj.weight", "blk.{bid}.attn_v.weight", {D::KV, D::Embd}},
      {"model.layers.{bid}.self_attn.o_proj.weight", "blk.{bid}.attn_output.weight", {D::Embd, D::Q}},
      {"model.layers.{bid}.mlp.gate_proj.weight", "blk.{bid}.ffn_gate.weight", {D::FF, D::Embd}},
      {"model.layers.{bid}.mlp.up_proj.weight", "blk.{bid}.ffn_up.weight", {D::FF, D::Embd}},
      {"model.layers.{bid}.mlp.down_proj.weight", "blk.{bid}.ffn_down.weight", {D::Embd, D::FF}},
  };
  a.layer_requires = {{"blk.{bid}.attn_norm.weight"},   {"blk.{bid}.attn_q.weight"},   {"blk.{bid}.attn_k.weight"},
                      {"blk.{bid}.attn_v.weight"},      {"blk.{bid}.attn_output.weight"},
                      {"blk.{bid}.ffn_gate.weight"},    {"blk.{bid}.ffn_up.weight"},   {"blk.{bid}.ffn_down.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  return a;
}

}  // namespace

std::vector<ArchDef> cohere_archs() {
  return {cohere("command-r", "CohereForCausalLM", false), cohere("cohere2", "Cohere2ForCausalLM", true)};
}

}  // namespace ferrite::convert
