// nomic-bert (nomic-embed-text): bert without position table or biases;
// NeoX RoPE on q and k (rope.freq_base), a fused attn_qkv, and a SwiGLU
// feed-forward down(silu(gate h) * up h); pooling_type required, as
// llama.cpp c392e50 requires it (bert_style.h).
#include "model/arch_factories.h"
#include "model/bert_style.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_nomic_bert(const gguf::File& file, HParams& hp) {
  BertStyleOptions opt;
  opt.positions = BertPositions::Rope;
  opt.fused_qkv = true;
  opt.gated_ffn = true;
  opt.gelu = false;
  opt.pooling_required = true;
  return make_bert_style(file, hp, opt);
}

}  // namespace ferrite::model
