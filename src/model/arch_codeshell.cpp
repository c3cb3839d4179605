// codeshell (CodeShell): gpt2-style blocks (LayerNorm with biases, fused QKV
// with bias, GELU MLP with biases) with NeoX RoPE instead of learned
// positions, grouped-query attention.
#include "model/arch_factories.h"
#include "model/gpt_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_codeshell(const gguf::File& file, HParams& hp) {
  GptStyleOptions opt;
  opt.rope = true;
  opt.neox = true;
  return make_gpt_style(file, hp, opt);
}

}  // namespace ferrite::model
