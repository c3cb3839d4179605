// xverse (XVERSE 7B/13B/65B): the Llama decoder (adjacent-pair RoPE, SwiGLU,
// untied output) under its own name.
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_xverse(const gguf::File& file, HParams& hp) {
  DecoderOptions opt;
  opt.neox_rope = false;
  return std::make_unique<Decoder>(file, hp, opt);
}

}  // namespace ferrite::model
