// The encoders of the bert line (bert, nomic-bert, jina-bert-v2; each
// arch_<family>.cpp chooses the options), post-LayerNorm blocks with
// bidirectional attention within each sequence of the batch (no KV cache):
//   x = ln(tok_embd[t] + token_types[type of t] (+ position_embd[p]))
// (a token's type, its segment id, from the batch: 0 unless given; a
// cross-encoder's document has type 1 (tokenizer/rank_pair.h))
//   a = attn(x); x = ln(x + a) (jina: and, with attn_norm_2, x = ln(x + x_in))
//   x = ln(x + ffn(x))
// The output rows are the final hidden states [n_out, n_embd]; the runtime
// pools them per sequence as <arch>.pooling_type says (model/pooling.h).
// Rank pooling (rerankers): the runtime asks for each sequence's first row
// (ForwardBatch::classify) and the classification head gives its score,
// [n_out, 1]: out(tanh(cls h + b)) + b_out (bert) or tanh(cls h + b) (jina).
// Options: how positions enter (learned table, RoPE on q/k, or ALiBi), fused
// or separate Q/K/V, and the feed-forward (GELU MLP, SwiGLU, GEGLU).
#pragma once

#include <memory>

#include "model/architecture.h"
#include "model/hparams.h"

namespace ferrite::model {

enum class BertPositions { Learned, Rope, Alibi };

struct BertStyleOptions {
  BertPositions positions = BertPositions::Learned;
  float max_alibi_bias = 0.0f;  // ALiBi: llama.cpp fixes 8 for jina-bert-v2
  bool fused_qkv = false;       // attn_qkv [n_embd, 3 n_embd] instead of attn_q/k/v (nomic-bert)
  bool gated_ffn = false;       // ffn_gate: down(act(gate h) * up h)
  bool gelu = true;             // GELU (llama.cpp's f16 table), else SiLU
  bool pooling_required = false;  // <arch>.pooling_type must be present (nomic-bert in llama.cpp)
  // The classification head a reranker (pooling rank) needs, as llama.cpp
  // c392e50 binds it: ClsHidden (bert) cls [n_embd, n_embd] + bias, tanh,
  // then cls.output [n_embd, 1] + bias; ClsScore (jina-bert-v2, e.g.
  // jina-reranker-v1) cls [n_embd, 1] + bias, tanh; None: rank pooling refused.
  enum class Head { None, ClsHidden, ClsScore } head = Head::None;
};

std::unique_ptr<Architecture> make_bert_style(const gguf::File& file, HParams& hp, const BertStyleOptions& opt);

}  // namespace ferrite::model
