// exaone (LG EXAONE 3.x): the Llama decoder (GQA, SwiGLU, optional Llama 3
// rope_freqs, untied output) with NeoX-paired RoPE.
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_exaone(const gguf::File& file, HParams& hp) {
  DecoderOptions opt;
  opt.neox_rope = true;
  return std::make_unique<Decoder>(file, hp, opt);
}

}  // namespace ferrite::model
