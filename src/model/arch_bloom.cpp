// bloom (BLOOM, BLOOMZ): a LayerNorm of the token embeddings
// (token_embd_norm), then gpt2-style blocks (LayerNorm with biases, fused QKV
// with bias, GELU MLP) without position embeddings: ALiBi with max bias 8.
#include "model/arch_factories.h"
#include "model/gpt_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_bloom(const gguf::File& file, HParams& hp) {
  GptStyleOptions opt;
  opt.alibi_default = 8.0f;  // BLOOM's fixed ALiBi bias (llama.cpp: no GGUF key)
  return make_gpt_style(file, hp, opt);
}

}  // namespace ferrite::model
