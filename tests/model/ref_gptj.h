// A double-precision GPT-J forward written from the published definition
// (EleutherAI's GPT-J / transformers' GPTJModel), on the weights of a
// TinyGpt (tiny_gpt.h) in gguf-py's GPTJ tensor names, with llama.cpp's
// conventions of ref_common.h (f16 cache and probabilities, tabulated GELU):
//   x = wte[t]
//   per layer: h = ln_1(x); x += out_proj(attn(rope(q h), rope(k h), v h)) + fc_out(gelu(fc_in h))
//   logits = lm_head(ln_f(x)) + b
// with rotate-every-two RoPE (pairs (2i, 2i+1)) on the first rotary_dim
// dimensions of each head.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "model/ref_common.h"
#include "model/tiny_gpt.h"

namespace ferrite::test::ref {

// LayerNorm of every row: (x - mean) / sqrt(var + eps) * w + b.
inline Rows layer_norm(const Rows& x, int64_t dim, const std::vector<float>& w, const std::vector<float>& b,
                       double eps) {
  Rows y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(dim); ++r) {
    const double* v = x.data() + r * dim;
    double mean = 0, var = 0;
    for (int64_t d = 0; d < dim; ++d) mean += v[d];
    mean /= static_cast<double>(dim);
    for (int64_t d = 0; d < dim; ++d) var += (v[d] - mean) * (v[d] - mean);
    const double inv = 1.0 / std::sqrt(var / static_cast<double>(dim) + eps);
    for (int64_t d = 0; d < dim; ++d) y[r * dim + d] = (v[d] - mean) * inv * w[d] + b[d];
  }
  return y;
}

inline void add_bias(Rows& x, const std::vector<float>& b) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += b[i % b.size()];
}

// Logits [n, vocab] of tokens at positions 0..n-1.
inline Rows gptj_forward(const TinyGguf& g, const TinyGptConfig& c, const std::vector<int32_t>& tokens) {
  const int64_t n = static_cast<int64_t>(tokens.size()), e = c.n_embd, hd = c.n_embd / c.n_head;
  const int64_t n_kv = c.n_head_kv * hd, vocab = TinyGpt::kVocab;
  constexpr double kEps = 1e-5;
  std::vector<int32_t> pos(static_cast<size_t>(n));
  Rows x(static_cast<size_t>(n * e));
  for (int64_t t = 0; t < n; ++t) {
    pos[static_cast<size_t>(t)] = static_cast<int32_t>(t);
    for (int64_t d = 0; d < e; ++d) x[t * e + d] = g.t("token_embd.weight")[tokens[t] * e + d];
  }
  Rope rope;
  rope.n_rot = c.n_rot;
  rope.neox = false;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const Rows h = layer_norm(x, e, g.t(p + "attn_norm.weight"), g.t(p + "attn_norm.bias"), kEps);
    Rows q = linear(h, n, g.t(p + "attn_q.weight"), e, e);
    Rows k = linear(h, n, g.t(p + "attn_k.weight"), e, n_kv);
    const Rows v = linear(h, n, g.t(p + "attn_v.weight"), e, n_kv);
    ref::rope(q, n, c.n_head, hd, pos, rope);
    ref::rope(k, n, c.n_head_kv, hd, pos, rope);
    const Rows a = attention(q, k, v, pos, n, c.n_head, c.n_head_kv, hd, 1.0 / std::sqrt(static_cast<double>(hd)), 0);
    add_inplace(x, linear(a, n, g.t(p + "attn_output.weight"), e, e));
    Rows f = linear(h, n, g.t(p + "ffn_up.weight"), e, c.n_ff);
    add_bias(f, g.t(p + "ffn_up.bias"));
    for (double& u : f) u = gelu_f16(u);
    Rows y = linear(f, n, g.t(p + "ffn_down.weight"), c.n_ff, e);
    add_bias(y, g.t(p + "ffn_down.bias"));
    add_inplace(x, y);
  }
  const Rows h = layer_norm(x, e, g.t("output_norm.weight"), g.t("output_norm.bias"), kEps);
  Rows logits = linear(h, n, g.t("output.weight"), e, vocab);
  add_bias(logits, g.t("output.bias"));
  return logits;
}

}  // namespace ferrite::test::ref
