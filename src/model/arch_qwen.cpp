// qwen2 (Q/K/V biases), qwen2moe (experts without renormalisation, plus a
// shared expert gated by a sigmoid), qwen3 and qwen3moe (per-head Q/K
// RMSNorm, renormalised experts). All use NeoX RoPE; the optional tensors
// (biases, norms, shared expert) are bound when the file has them.
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_qwen2(const gguf::File& file, HParams& hp) {
  return std::make_unique<Decoder>(file, hp, DecoderOptions{.neox_rope = true, .moe_norm_weights = true});
}

std::unique_ptr<Architecture> make_qwen2moe(const gguf::File& file, HParams& hp) {
  return std::make_unique<Decoder>(file, hp, DecoderOptions{.neox_rope = true, .moe_norm_weights = false});
}

std::unique_ptr<Architecture> make_qwen3(const gguf::File& file, HParams& hp) {
  return std::make_unique<Decoder>(file, hp, DecoderOptions{.neox_rope = true, .moe_norm_weights = true});
}

}  // namespace ferrite::model
