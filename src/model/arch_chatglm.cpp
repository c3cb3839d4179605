// chatglm (GLM-4-9B, the layout llama.cpp c392e50 reads as chatglm): RMSNorm,
// a fused QKV projection with bias (grouped-query), RoPE with adjacent pairs
// over the first rope.dimension_count dimensions of each head (half of it),
// no attention output bias, and a SwiGLU whose ffn_up holds gate | up.
#include "model/arch_factories.h"
#include "model/gpt_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_chatglm(const gguf::File& file, HParams& hp) {
  GptStyleOptions opt;
  opt.norm = backend::NormKind::Rms;
  opt.rope = true;
  opt.gelu = false;
  opt.fused_gate_up = true;
  return make_gpt_style(file, hp, opt);
}

}  // namespace ferrite::model
