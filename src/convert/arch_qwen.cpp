// qwen2 (Q/K/V biases), qwen2moe (experts, a shared expert with a sigmoid
// gate), qwen3 (per-head Q/K norms) and qwen3moe. NeoX RoPE: no row
// reordering. qwen2 and qwen3 read tokenizer.model when present, else
// tokenizer.json; the MoE models tokenizer.json.
#include "convert/arch.h"
#include "convert/decoder_rules.h"

namespace ferrite::convert {
namespace {

void qwen2_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  if (const Json* rs = p.rope_scaling()) {
    const std::string type = rs->value("type", rs->value("rope_type", std::string()));
    if (type == "yarn" && rs->contains("factor")) {
      p.str("rope.scaling.type", "yarn");
      p.f32("rope.scaling.factor", json_number(*rs, "factor", p.config_path()).value_or(1.0));
      if (auto ctx = json_int(*rs, "original_max_position_embeddings", p.config_path())) {
        p.u32("rope.scaling.original_context_length", *ctx);
      }
    }
  }
}

void qwen_moe_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  if (auto n = p.opt_int({"num_experts"})) p.u32("expert_count", *n);
  if (auto n = p.opt_int({"moe_intermediate_size"})) p.u32("expert_feed_forward_length", *n);
  if (auto n = p.opt_int({"shared_expert_intermediate_size"})) p.u32("expert_shared_feed_forward_length", *n);
}

VocabKeys spm_or_gpt2(const HfFiles& f, int64_t vocab_size, const VocabOptions& opt) {
  return f.has("tokenizer.model") ? vocab_sentencepiece(f, vocab_size) : vocab_gpt2(f, vocab_size, opt);
}

ArchDef make(const char* arch, std::vector<const char*> classes, DecoderRuleOptions o, bool moe) {
  ArchDef a;
  a.gguf_arch = arch;
  a.hf_classes = std::move(classes);
  a.params = moe ? qwen_moe_params : qwen2_params;
  if (moe) {
    a.vocab = vocab_gpt2;
  } else {
    a.vocab = spm_or_gpt2;
  }
  a.rules = decoder_rules(o);
  a.layer_requires = decoder_layer_requires(o);
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq"};
  return a;
}

}  // namespace

std::vector<ArchDef> qwen_archs() {
  DecoderRuleOptions dense, norms, moe_shared, moe_norms;
  norms.qk_norm = true;
  moe_shared.moe = MoeLayout::QwenShared;
  moe_norms.qk_norm = true;
  moe_norms.moe = MoeLayout::Qwen;
  return {
      make("qwen2", {"Qwen2ForCausalLM"}, dense, false),
      make("qwen2moe", {"Qwen2MoeForCausalLM"}, moe_shared, true),
      make("qwen3", {"Qwen3ForCausalLM"}, norms, false),
      make("qwen3moe", {"Qwen3MoeForCausalLM"}, moe_norms, true),
  };
}

}  // namespace ferrite::convert
