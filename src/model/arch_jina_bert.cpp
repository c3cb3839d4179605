// jina-bert-v2 (jina-embeddings-v2): bert without position table; ALiBi in
// the attention with llama.cpp c392e50's fixed maximum bias 8 (symmetric
// distances, -|i - j|, as its non-causal mask), separate Q/K/V with biases,
// a GEGLU feed-forward down(gelu(gate h) * up h) + bias, and an optional
// second attention LayerNorm attn_norm_2; a reranker's head is cls
// [n_embd, 1] -> tanh, without cls.output (jina-reranker-v1; bert_style.h).
#include "model/arch_factories.h"
#include "model/bert_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_jina_bert_v2(const gguf::File& file, HParams& hp) {
  BertStyleOptions opt;
  opt.positions = BertPositions::Alibi;
  opt.max_alibi_bias = 8.0f;
  opt.gated_ffn = true;
  opt.gelu = true;
  opt.head = BertStyleOptions::Head::ClsScore;
  return make_bert_style(file, hp, opt);
}

}  // namespace ferrite::model
