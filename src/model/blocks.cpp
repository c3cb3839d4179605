#include "model/blocks.h"

#include <string>

#include "core/error.h"

namespace ferrite::model {

Norm bind_norm(const WeightBinder& b, const std::string& name, int64_t n) {
  return Norm{b.require_vec(name + ".weight", n), b.optional_vec(name + ".bias", n)};
}

Tensor bind_qk_norm(const WeightBinder& b, const std::string& name, int64_t head_dim, int64_t whole, bool whole_ok) {
  const gguf::TensorInfo* t = b.file().find_tensor(name);
  const bool is_whole = whole_ok && t != nullptr && t->ne[0] == whole;
  return b.optional_vec(name, is_whole ? whole : head_dim);
}

Tensor bind_token_embd(const WeightBinder& b, HParams& hp) {
  const gguf::TensorInfo* embd = b.file().find_tensor("token_embd.weight");
  if (embd == nullptr) throw ModelError(b.file().path() + ": required tensor token_embd.weight is missing");
  hp.n_vocab = embd->ne[1];
  return b.require("token_embd.weight", {hp.n_embd, hp.n_vocab});
}

backend::AttentionSpec attention_spec(const HParams& hp, int64_t il, const AttentionWeights& w, int rope,
                                      bool sliding) {
  backend::AttentionSpec a;
  a.layer = il;
  a.w = &w;
  a.rope = rope;
  a.sliding = sliding;
  a.softcap = hp.attn_softcap;
  a.max_alibi_bias = hp.max_alibi_bias;
  return a;
}

void add_position_embeddings(Step& s, const Tensor& pos_embd, Act x) {
  const int64_t n = s.batch.n_tokens;
  const int64_t n_pos = pos_embd.ne(1);
  for (int64_t t = 0; t < n; ++t) {
    const int32_t p = s.batch.pos[t];
    if (p < 0 || p >= n_pos) {
      throw InvalidArgument("position " + std::to_string(p) + " is beyond the model's " + std::to_string(n_pos) +
                            " learned positions");
    }
  }
  // The rows of the positions, looked up like tokens: [n, n_embd].
  backend::Ops& o = s.ops();
  const Act pe = o.buffer(Buf::F, n, pos_embd.ne(0));
  o.embed(pos_embd, Ids::Positions, pe);
  o.add(x, pe);
}

void output_head(Step& s, const HParams& hp, NormKind kind, const Norm& norm, const Tensor& output,
                 const Tensor& output_b, Act x, float* logits, float* hidden, float logit_scale) {
  const int64_t n_out = s.batch.n_out;
  if (n_out == 0) return;
  backend::Ops& o = s.ops();
  const Act rows = hidden != nullptr ? o.output(Buf::Hidden, hidden, n_out, hp.n_embd)
                                     : o.buffer(Buf::Rows, n_out, hp.n_embd);
  o.gather_rows(x, rows);
  o.norm(kind, rows, norm, rows, logits != nullptr ? &output : nullptr);  // [n_out, n_embd]
  if (logits == nullptr) return;
  const Act out = o.output(Buf::Logits, logits, n_out, hp.n_vocab);
  o.linear(output, output_b, rows, out);  // [n_out, n_vocab]
  if (logit_scale != 1.0f) o.scale(out, logit_scale);
  if (hp.final_softcap > 0.0f) o.softcap(out, hp.final_softcap);
}

}  // namespace ferrite::model
