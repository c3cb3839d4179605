// olmo (AllenAI OLMo 1B/7B, February 2024): the Llama decoder (adjacent-pair
// RoPE, SwiGLU) with non-parametric LayerNorms (no weight, no bias;
// attention.layer_norm_epsilon) before each block and the output. OLMo 1.7
// clips q, k and v to +-attention.clamp_kqv, which is not implemented: such
// files are refused.
#include "core/error.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_olmo(const gguf::File& file, HParams& hp) {
  const gguf::Metadata md(file);
  if (md.opt_float(md.arch_key("attention.clamp_kqv")).value_or(0.0f) > 0.0f) {
    throw ModelError(file.path() + ": olmo with attention.clamp_kqv (OLMo 1.7) is not supported");
  }
  DecoderOptions opt;
  opt.neox_rope = false;
  opt.layer_norm = true;
  opt.norm_weights = false;
  return std::make_unique<Decoder>(file, hp, opt);
}

}  // namespace ferrite::model
