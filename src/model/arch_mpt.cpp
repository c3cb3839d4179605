// mpt (MosaicML MPT): pre-LayerNorm blocks, fused QKV and a GELU MLP, biases
// where the file has them (MPT-7B: none), ALiBi with the file's
// attention.max_alibi_bias, learned positions only when the file has them,
// Q|K|V clipped to [-c, c] with the file's attention.clamp_kqv c (when > 0).
// Q/K LayerNorms and the ffn_act scales are refused (model/gpt_style.cpp).
#include "core/error.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/gpt_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_mpt(const gguf::File& file, HParams& hp) {
  const gguf::Metadata md(file);
  GptStyleOptions opt;  // ALiBi from attention.max_alibi_bias (MPT-7B: 8)
  opt.clamp_qkv = md.opt_float(md.arch_key("attention.clamp_kqv")).value_or(0.0f);
  if (!(opt.clamp_qkv >= 0.0f)) throw ModelError(file.path() + ": mpt.attention.clamp_kqv must not be negative");
  return make_gpt_style(file, hp, opt);
}

}  // namespace ferrite::model
