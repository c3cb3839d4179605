// stablelm (Stability AI StableLM 3B 4E1T, StableLM 2 1.6B, Zephyr): the
// pre-norm decoder with LayerNorms with biases, NeoX RoPE over the first
// rope.dimension_count dimensions of each head only (partial rotary),
// optional Q/K/V biases, SwiGLU, untied output. StableLM 2 12B (per-head
// q/k LayerNorms, parallel attention and feed-forward without ffn_norm) is
// refused.
#include "core/error.h"
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_stablelm(const gguf::File& file, HParams& hp) {
  if (hp.n_layer > 0 && (file.find_tensor("blk.0.attn_q_norm.weight") != nullptr ||
                         file.find_tensor("blk.0.ffn_norm.weight") == nullptr)) {
    throw ModelError(file.path() +
                     ": StableLM 2 12B's form (per-head q/k LayerNorms, parallel residual) is not supported");
  }
  DecoderOptions opt;
  opt.neox_rope = true;
  opt.layer_norm = true;
  return std::make_unique<Decoder>(file, hp, opt);
}

}  // namespace ferrite::model
