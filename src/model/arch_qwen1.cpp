// qwen (Qwen v1): RMSNorm, a fused QKV projection with bias (c_attn), NeoX
// RoPE, SwiGLU without biases, no output bias. The file's
// feed_forward_length is twice the gate/up width (HF's intermediate_size);
// the tensors' shapes give the width.
#include "model/arch_factories.h"
#include "model/gpt_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_qwen1(const gguf::File& file, HParams& hp) {
  GptStyleOptions opt;
  opt.norm = backend::NormKind::Rms;
  opt.rope = true;
  opt.neox = true;
  opt.gelu = false;
  return make_gpt_style(file, hp, opt);
}

}  // namespace ferrite::model
