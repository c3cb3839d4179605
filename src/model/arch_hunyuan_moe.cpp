// hunyuan-moe (Tencent Hunyuan-A13B): the pre-norm decoder with NeoX RoPE,
// per-head RMSNorm of q and k (attn_q_norm, attn_k_norm [head_dim]) applied
// after RoPE, as the published definition (transformers' HunYuanMoEV1) does
// and ik_llama.cpp 8337e4c does not (it norms before RoPE: 1e-3 to 1e-2 apart
// on the tiny models of the tests), and experts in every layer:
// softmax router, top-k probabilities renormalised, plus an ungated shared
// expert (ffn_*_shexp).
#include "core/error.h"
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_hunyuan_moe(const gguf::File& file, HParams& hp) {
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    for (const char* t : {"attn_q_norm.weight", "attn_k_norm.weight", "ffn_gate_inp.weight", "ffn_up_shexp.weight"}) {
      if (file.find_tensor(WeightBinder::layer_name(il, t)) == nullptr) {
        throw ModelError(file.path() + ": hunyuan-moe needs " + WeightBinder::layer_name(il, t));
      }
    }
  }
  return std::make_unique<Decoder>(file, hp, DecoderOptions{.neox_rope = true, .moe_norm_weights = true, .qk_norm_after_rope = true});
}

}  // namespace ferrite::model
