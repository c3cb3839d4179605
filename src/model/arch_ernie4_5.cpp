// ernie4_5 (Baidu ERNIE 4.5, dense): Llama's decoder (adjacent-pair RoPE
// over the whole head, optional Q/K/V/O biases).
// ernie4_5-moe: the same attention; after leading_dense_block_count dense
// layers, every interleave_moe_layer_step-th layer (il + 1 a multiple of it)
// has experts: softmax router whose choice ranks the probabilities plus the
// optional selection bias blk.N.exp_probs_b.bias, the chosen probabilities
// renormalised, and an ungated shared expert (ffn_*_shexp) when the file has
// one. The expert layers are those holding ffn_gate_inp; the factory checks
// that they are the ones the keys name.
#include <string>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_ernie4_5(const gguf::File& file, HParams& hp) {
  return std::make_unique<Decoder>(file, hp, DecoderOptions{.neox_rope = false});
}

std::unique_ptr<Architecture> make_ernie4_5_moe(const gguf::File& file, HParams& hp) {
  const gguf::Metadata md(file);
  const uint64_t lead = md.opt_uint(md.arch_key("leading_dense_block_count")).value_or(0);
  const uint64_t step = md.opt_uint(md.arch_key("interleave_moe_layer_step")).value_or(1);
  if (step == 0) throw ModelError(file.path() + ": ernie4_5-moe.interleave_moe_layer_step must be positive");
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const bool moe = static_cast<uint64_t>(il) >= lead && static_cast<uint64_t>(il + 1) % step == 0;
    const bool has = file.find_tensor(WeightBinder::layer_name(il, "ffn_gate_inp.weight")) != nullptr;
    if (moe != has) {
      throw ModelError(file.path() + ": layer " + std::to_string(il) + (moe ? " lacks" : " has") +
                       " experts against leading_dense_block_count " + std::to_string(lead) +
                       " and interleave_moe_layer_step " + std::to_string(step));
    }
  }
  return std::make_unique<Decoder>(file, hp, DecoderOptions{.neox_rope = false, .moe_norm_weights = true});
}

}  // namespace ferrite::model
