// bert: learned positions, separate Q/K/V with biases, GELU MLP with biases;
// a reranker's head cls [n_embd, n_embd] -> tanh -> cls.output [n_embd, 1]
// (bge-reranker; bert_style.h).
#include "model/arch_factories.h"
#include "model/bert_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_bert(const gguf::File& file, HParams& hp) {
  BertStyleOptions opt;
  opt.head = BertStyleOptions::Head::ClsHidden;
  return make_bert_style(file, hp, opt);
}

}  // namespace ferrite::model
