// refact (Refact-1.6B): a Llama-style block (RMSNorm, separate Q/K/V, SwiGLU)
// without RoPE: ALiBi with max bias 8, multi-query attention.
#include "model/arch_factories.h"
#include "model/gpt_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_refact(const gguf::File& file, HParams& hp) {
  GptStyleOptions opt;
  opt.norm = backend::NormKind::Rms;
  opt.gelu = false;
  opt.alibi_default = 8.0f;  // Refact's fixed ALiBi bias (llama.cpp: no GGUF key)
  return make_gpt_style(file, hp, opt);
}

}  // namespace ferrite::model
