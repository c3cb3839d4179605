// jais (Jais): LayerNorm with biases, fused QKV with bias, SwiGLU with
// biases on gate, up and down, ALiBi with the file's attention.max_alibi_bias,
// and scores scaled by 1/head_dim (muP) instead of 1/sqrt(head_dim).
#include "model/arch_factories.h"
#include "model/gpt_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_jais(const gguf::File& file, HParams& hp) {
  GptStyleOptions opt;
  opt.gelu = false;  // ALiBi from attention.max_alibi_bias
  opt.attn_scale = 1.0f / static_cast<float>(hp.head_dim);
  return make_gpt_style(file, hp, opt);
}

}  // namespace ferrite::model
