// phi2 (Phi-1.5, Phi-2): attention and a GELU MLP side by side from one
// LayerNorm (with bias) of the input, fused or separate Q/K/V with biases,
// NeoX RoPE over the first rope.dimension_count dimensions of each head
// (partial), an output projection with bias:
//   h = ln(x); x += attn(h) + mlp(h); logits = output(ln(x)) + b
#include "model/arch_factories.h"
#include "model/gpt_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_phi2(const gguf::File& file, HParams& hp) {
  GptStyleOptions opt;
  opt.parallel = true;
  opt.rope = true;
  opt.neox = true;
  return make_gpt_style(file, hp, opt);
}

}  // namespace ferrite::model
