// orion (OrionStar Orion 14B): the Llama decoder (adjacent-pair RoPE, SwiGLU,
// untied output) with LayerNorms with biases (attention.layer_norm_epsilon)
// in place of the RMSNorms.
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_orion(const gguf::File& file, HParams& hp) {
  DecoderOptions opt;
  opt.neox_rope = false;
  opt.layer_norm = true;
  return std::make_unique<Decoder>(file, hp, opt);
}

}  // namespace ferrite::model
