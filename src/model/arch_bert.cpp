// bert: learned positions, separate Q/K/V with biases, GELU MLP with biases
// (bert_style.h).
#include "model/arch_factories.h"
#include "model/bert_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_bert(const gguf::File& file, HParams& hp) {
  return make_bert_style(file, hp, BertStyleOptions{});
}

}  // namespace ferrite::model
