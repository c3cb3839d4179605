// llama: Llama 1/2/3, Mistral, and Mixtral-style experts (ffn_gate_inp
// present). Adjacent-pair RoPE; Llama 3 frequency factors from rope_freqs.
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_llama(const gguf::File& file, HParams& hp) {
  DecoderOptions opt;
  opt.neox_rope = false;
  opt.moe_norm_weights = true;
  return std::make_unique<Decoder>(file, hp, opt);
}

}  // namespace ferrite::model
