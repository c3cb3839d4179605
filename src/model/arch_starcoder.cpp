// starcoder (gpt_bigcode: StarCoder, SantaCoder): gpt2's block (learned
// absolute positions, LayerNorm with biases, fused QKV with bias, GELU MLP)
// with multi-query attention (one K/V head; head_count_kv 1).
#include "model/arch_factories.h"
#include "model/gpt_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_starcoder(const gguf::File& file, HParams& hp) {
  const GptStyleOptions opt;
  return make_gpt_style(file, hp, opt);
}

}  // namespace ferrite::model
