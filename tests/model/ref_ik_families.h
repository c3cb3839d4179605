// A double-precision reference forward of the tiny models of ik_llama.cpp's
// families (tiny_families.h: smollm3, glm4, ernie4_5, ernie4_5-moe,
// hunyuan-moe, glm4moe), written from their published definitions (Hugging
// Face transformers' SmolLM3, Glm4, Ernie4_5, Ernie4_5_Moe, HunYuanMoEV1,
// Glm4Moe) with
// llama.cpp's conventions of ref_common.h (f16 cache and attention
// products), reading the weights back from the TinyGguf:
//   x = embed(tokens)
//   per layer:
//     h = rms_norm(x) * attn_norm
//     q, k, v = h Wq (+ bq), h Wk (+ bk), h Wv (+ bv)
//     hunyuan-moe, glm4moe: q, k = rms_norm per head * attn_q_norm /
//                  attn_k_norm (glm4moe before RoPE; hunyuan-moe after it, as
//                  transformers' HunYuanMoEV1 orders them and ik_llama.cpp
//                  8337e4c does not)
//     RoPE of the first n_rot dimensions of every head: adjacent pairs
//       (smollm3, glm4, ernie4_5*), NeoX pairs (hunyuan-moe, glm4moe); none on
//       smollm3's layers with (il + 1) % 4 == 0
//     a = Wo · softmax(q k^T / sqrt(head_dim), causal) v
//     glm4: a = rms_norm(a) * post_attention_norm
//     x += a
//     h = rms_norm(x) * ffn_norm   (glm4moe: stored as post_attention_norm)
//     dense: f = down(silu(gate h) * up h); glm4: gate | up are the two halves of ffn_up
//     experts: p = softmax(router h) (glm4moe: sigmoid); the top-k of
//       p + exp_probs_b (the bias only chooses); weights p_k / sum(p_topk)
//       (glm4moe: times expert_weights_scale 2.5); f = sum_k w_k
//       expert_k(h) + shared expert(h) (ungated)
//     glm4: f = rms_norm(f) * post_ffw_norm
//     x += f
//   logits = output(rms_norm(x) * output_norm)   (tied to token_embd when absent)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/tiny_families.h"

namespace ferrite::test {

class RefIkFamily {
 public:
  // g: the file make_tiny_family(family) wrote.
  RefIkFamily(const std::string& family, const TinyGguf& g) : family_(family), g_(g) {
    namespace d = tiny_family_detail;
    n_layer_ = 0;
    while (g_.has("blk." + std::to_string(n_layer_) + ".attn_norm.weight")) ++n_layer_;
    n_vocab_ = d::kVocab;
    n_embd_ = d::kEmbd;
    glm4moe_ = family == "glm4moe";
    neox_ = family == "hunyuan-moe" || glm4moe_;
    norm_after_rope_ = family == "hunyuan-moe";
    n_rot_ = family == "glm4" || glm4moe_ ? 8 : d::kHeadDim;
  }

  // Alternatives of the reference only (the file stays), for the tests to
  // show that the comparison sees them.
  int64_t n_rot_ = 0;
  bool neox_ = false;
  bool norm_after_rope_ = false;  // hunyuan-moe: q/k norms after RoPE

  // Logits [n, n_vocab] of one sequence at positions 0..n-1.
  ref::Rows logits(const std::vector<int32_t>& tokens) const {
    const int64_t n = static_cast<int64_t>(tokens.size()), e = n_embd_;
    std::vector<int32_t> pos(tokens.size());
    std::iota(pos.begin(), pos.end(), 0);
    ref::Rows x(static_cast<size_t>(n * e));
    const auto& emb = g_.t("token_embd.weight");
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < e; ++c) x[i * e + c] = emb[tokens[i] * e + c];
    }
    for (int64_t il = 0; il < n_layer_; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      ref::Rows h = x;
      ref::rms_norm(h, e, g_.t(p + "attn_norm.weight"), kEps);
      ref::Rows a = attention(h, n, p, pos, !(family_ == "smollm3" && (il + 1) % 4 == 0));
      if (!glm4moe_ && g_.has(p + "post_attention_norm.weight")) {
        ref::rms_norm(a, e, g_.t(p + "post_attention_norm.weight"), kEps);
      }
      ref::add_inplace(x, a);
      h = x;
      ref::rms_norm(h, e, g_.t(p + (glm4moe_ ? "post_attention_norm.weight" : "ffn_norm.weight")), kEps);
      ref::Rows f = g_.has(p + "ffn_gate_inp.weight") ? experts(h, n, p) : dense(h, n, p);
      if (g_.has(p + "post_ffw_norm.weight")) ref::rms_norm(f, e, g_.t(p + "post_ffw_norm.weight"), kEps);
      ref::add_inplace(x, f);
    }
    ref::rms_norm(x, e, g_.t("output_norm.weight"), kEps);
    return ref::linear(x, n, g_.t(g_.has("output.weight") ? "output.weight" : "token_embd.weight"), e, n_vocab_);
  }

 private:
  static constexpr double kEps = 1e-5;

  void add_bias(ref::Rows& y, const std::string& name) const {
    if (!g_.has(name)) return;
    const auto& b = g_.t(name);
    for (size_t i = 0; i < y.size(); ++i) y[i] += b[i % b.size()];
  }

  ref::Rows attention(const ref::Rows& h, int64_t n, const std::string& p, const std::vector<int32_t>& pos,
                      bool rope) const {
    namespace d = tiny_family_detail;
    const int64_t e = n_embd_, hd = d::kHeadDim, n_head = d::kHead;
    const int64_t n_head_kv = static_cast<int64_t>(g_.t(p + "attn_k.weight").size()) / e / hd;
    const int64_t n_q = n_head * hd, n_kv = n_head_kv * hd;
    ref::Rows q = ref::linear(h, n, g_.t(p + "attn_q.weight"), e, n_q);
    ref::Rows k = ref::linear(h, n, g_.t(p + "attn_k.weight"), e, n_kv);
    ref::Rows v = ref::linear(h, n, g_.t(p + "attn_v.weight"), e, n_kv);
    add_bias(q, p + "attn_q.bias");
    add_bias(k, p + "attn_k.bias");
    add_bias(v, p + "attn_v.bias");
    const bool norms = g_.has(p + "attn_q_norm.weight");
    if (norms && !norm_after_rope_) {
      ref::rms_norm(q, hd, g_.t(p + "attn_q_norm.weight"), kEps);
      ref::rms_norm(k, hd, g_.t(p + "attn_k_norm.weight"), kEps);
    }
    if (rope) {
      const ref::Rope r{n_rot_, neox_, 10000.0, 1.0};
      ref::rope(q, n, n_head, hd, pos, r);
      ref::rope(k, n, n_head_kv, hd, pos, r);
    }
    if (norms && norm_after_rope_) {
      ref::rms_norm(q, hd, g_.t(p + "attn_q_norm.weight"), kEps);
      ref::rms_norm(k, hd, g_.t(p + "attn_k_norm.weight"), kEps);
    }
    const ref::Rows a =
        ref::attention(q, k, v, pos, n, n_head, n_head_kv, hd, 1.0 / std::sqrt(static_cast<double>(hd)), 0);
    ref::Rows o = ref::linear(a, n, g_.t(p + "attn_output.weight"), n_q, e);
    add_bias(o, p + "attn_output.bias");
    return o;
  }

  ref::Rows dense(const ref::Rows& h, int64_t n, const std::string& p) const {
    const int64_t e = n_embd_;
    const auto& up = g_.t(p + "ffn_up.weight");
    const auto& down = g_.t(p + "ffn_down.weight");
    const int64_t n_ff = static_cast<int64_t>(down.size()) / e;
    if (!g_.has(p + "ffn_gate.weight")) {
      // glm4: ffn_up's first n_ff rows are the gate, the next n_ff the up projection.
      return ref::gated_ffn(h, n, e, n_ff, up.data(), up.data() + n_ff * e, down.data(), ref::silu);
    }
    return ref::gated_ffn(h, n, e, n_ff, g_.t(p + "ffn_gate.weight").data(), up.data(), down.data(), ref::silu);
  }

  ref::Rows experts(const ref::Rows& h, int64_t n, const std::string& p) const {
    namespace d = tiny_family_detail;
    const int64_t e = n_embd_, n_ff = d::kFfExp, n_exp = d::kExperts, k_used = d::kExpertsUsed;
    const ref::Rows router = ref::linear(h, n, g_.t(p + "ffn_gate_inp.weight"), e, n_exp);
    const auto& gate = g_.t(p + "ffn_gate_exps.weight");
    const auto& up = g_.t(p + "ffn_up_exps.weight");
    const auto& down = g_.t(p + "ffn_down_exps.weight");
    const bool biased = g_.has(p + "exp_probs_b.bias");
    ref::Rows out(h.size(), 0.0);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> prob(router.begin() + t * n_exp, router.begin() + (t + 1) * n_exp);
      if (glm4moe_) {
        for (double& v : prob) v = 1.0 / (1.0 + std::exp(-v));
      } else {
        ref::softmax(prob);
      }
      const double scale = glm4moe_ ? 2.5 : 1.0;
      std::vector<double> key = prob;
      for (int64_t x = 0; biased && x < n_exp; ++x) key[x] += g_.t(p + "exp_probs_b.bias")[x];
      std::vector<int64_t> order(static_cast<size_t>(n_exp));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return key[a] > key[b]; });
      double sum = 0;
      for (int64_t j = 0; j < k_used; ++j) sum += prob[order[j]];
      const ref::Rows row(h.begin() + t * e, h.begin() + (t + 1) * e);
      for (int64_t j = 0; j < k_used; ++j) {
        const int64_t x = order[j];
        const ref::Rows y = ref::gated_ffn(row, 1, e, n_ff, gate.data() + x * n_ff * e, up.data() + x * n_ff * e,
                                           down.data() + x * e * n_ff, ref::silu);
        for (int64_t c = 0; c < e; ++c) out[t * e + c] += scale * prob[x] / sum * y[c];
      }
    }
    if (g_.has(p + "ffn_up_shexp.weight")) {
      ref::add_inplace(out, ref::gated_ffn(h, n, e, d::kFfExp, g_.t(p + "ffn_gate_shexp.weight").data(),
                                           g_.t(p + "ffn_up_shexp.weight").data(),
                                           g_.t(p + "ffn_down_shexp.weight").data(), ref::silu));
    }
    return out;
  }

  std::string family_;
  bool glm4moe_ = false;
  const TinyGguf& g_;
  int64_t n_layer_ = 0, n_vocab_ = 0, n_embd_ = 0;
};

}  // namespace ferrite::test
