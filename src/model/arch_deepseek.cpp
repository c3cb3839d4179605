// deepseek (DeepSeek-MoE / DeepSeek V1): a Llama decoder (adjacent-pair RoPE)
// whose first `leading_dense_block_count` layers have a dense SwiGLU
// feed-forward and the others softmax-routed experts, not renormalised, plus
// ungated shared experts (expert_shared_count of them, stored as one SwiGLU
// of width n_ff_exp * count). `expert_weights_scale` is read but, as in the
// published model and llama.cpp (c392e50, scale_w off for this family), not
// applied to the router weights.
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_deepseek(const gguf::File& file, HParams& hp) {
  const gguf::Metadata md(file);
  const uint64_t n_dense = md.get_uint(md.arch_key("leading_dense_block_count"));
  if (n_dense > static_cast<uint64_t>(hp.n_layer)) {
    throw ModelError(file.path() + ": leading_dense_block_count " + std::to_string(n_dense) +
                     " exceeds block_count " + std::to_string(hp.n_layer));
  }
  // The layers' kind is the tensors'; they must agree with the key.
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const bool experts = file.find_tensor(WeightBinder::layer_name(il, "ffn_gate_inp.weight")) != nullptr;
    if (experts != (static_cast<uint64_t>(il) >= n_dense)) {
      throw ModelError(file.path() + ": layer " + std::to_string(il) + (experts ? " has" : " lacks") +
                       " expert tensors against leading_dense_block_count " + std::to_string(n_dense));
    }
  }
  if (hp.rope.n_rot != hp.head_dim) {
    throw ModelError(file.path() + ": deepseek rotates whole heads (rope.dimension_count " +
                     std::to_string(hp.rope.n_rot) + " != head size " + std::to_string(hp.head_dim) + ")");
  }
  return std::make_unique<Decoder>(file, hp, DecoderOptions{.neox_rope = false, .moe_norm_weights = false});
}

}  // namespace ferrite::model
