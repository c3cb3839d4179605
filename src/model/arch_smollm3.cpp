// smollm3 (Hugging Face SmolLM3): Llama's decoder (adjacent-pair RoPE,
// optional Q/K/V/O biases, tied or separate output) where every fourth layer
// (il + 1 a multiple of kSmolLM3NoRopeStep) attends without any position
// encoding ("NoPE" layers).
#include "model/arch_factories.h"
#include "model/decoder.h"
#include "model/layer_rope.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_smollm3(const gguf::File& file, HParams& hp) {
  return std::make_unique<Decoder>(file, hp,
                                   DecoderOptions{.neox_rope = false, .no_rope_layer_step = kSmolLM3NoRopeStep});
}

}  // namespace ferrite::model
