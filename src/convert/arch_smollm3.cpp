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

constexpr int64_t kSmolNoRopeStep = 4;

void smollm3_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  p.u32("rope.dimension_count", p.dims.head_dim);
  require_no_rope_every(p, kSmolNoRopeStep);
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
