// gptj (GPT-J): attention and a GELU MLP side by side from one LayerNorm of
// the input (as phi2), separate Q/K/V projections without biases, RoPE with
// adjacent pairs ("rotate every two") over the first rope.dimension_count
// dimensions of each head, biases on the MLP and the output projection. The
// tensor names are gguf-py's for GPTJ (llama.cpp c392e50 has the name only,
// no graph: tests/model/ref_gptj.h is the reference).
#include "model/arch_factories.h"
#include "model/gpt_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_gptj(const gguf::File& file, HParams& hp) {
  GptStyleOptions opt;
  opt.parallel = true;
  opt.rope = true;
  return make_gpt_style(file, hp, opt);
}

}  // namespace ferrite::model
