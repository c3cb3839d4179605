// olmoe (AllenAI OLMoE): the pre-norm decoder with experts in every layer
// (softmax router, top-k probabilities used as they are, not renormalised),
// NeoX-paired RoPE, and RMSNorm of q and k over the whole projection
// (attn_q_norm [n_q], attn_k_norm [n_kv]; [head_dim]: per head) before RoPE.
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_olmoe(const gguf::File& file, HParams& hp) {
  DecoderOptions opt;
  opt.neox_rope = true;
  opt.moe_norm_weights = false;
  opt.qk_norm_whole = true;
  return std::make_unique<Decoder>(file, hp, opt);
}

}  // namespace ferrite::model
