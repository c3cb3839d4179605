// smollm3 (SmolLM3ForCausalLM): Llama's layout (Q/K rows reordered for
// adjacent-pair RoPE) where every fourth layer attends without RoPE. The
// engine runs that pattern (model/arch_smollm3.cpp); config.json's
// no_rope_layers (1: RoPE, 0: none) or no_rope_layer_interval must say the
// same, else the checkpoint is refused.
#include <string>

#include "convert/arch.h"
#include "convert/decoder_rules.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

constexpr int64_t kNoRopeStep = 4;

void smollm3_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  p.u32("rope.dimension_count", p.dims.head_dim);
  const Json& c = p.files().config;
  if (c.contains("no_rope_layers") && c["no_rope_layers"].is_array()) {
    const Json& v = c["no_rope_layers"];
    for (size_t i = 0; i < v.size(); ++i) {
      const bool rope = v[i].is_number_integer() && v[i].get<int64_t>() != 0;
      if (rope != ((static_cast<int64_t>(i) + 1) % kNoRopeStep != 0)) {
        throw ModelError(p.config_path() + ": no_rope_layers is not every fourth layer without RoPE");
      }
    }
  } else if (p.opt_int({"no_rope_layer_interval"}).value_or(kNoRopeStep) != kNoRopeStep) {
    throw ModelError(p.config_path() + ": no_rope_layer_interval other than 4 is not supported");
  }
}

}  // namespace

std::vector<ArchDef> smollm3_archs() {
  DecoderRuleOptions o;
  o.permute_qk = true;
  ArchDef a;
  a.gguf_arch = "smollm3";
  a.hf_classes = {"SmolLM3ForCausalLM"};
  a.params = smollm3_params;
  a.vocab = vocab_gpt2;
  a.rules = decoder_rules(o);
  a.layer_requires = decoder_layer_requires(o);
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  return {a};
}

}  // namespace ferrite::convert
