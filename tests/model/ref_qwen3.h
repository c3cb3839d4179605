// qwen3 and qwen3moe: a tiny random GGUF laid out as llama.cpp's converter
// writes these architectures, and a reference forward written from their
// published definition (Hugging Face transformers' Qwen3 / Qwen3MoE):
//   x = embed(tokens)
//   per layer:
//     h = rms_norm(x) * attn_norm
//     q, k, v = h Wq, h Wk, h Wv                  (no biases)
//     q, k = rms_norm per head (over head_dim) * q_norm / k_norm
//     q, k = NeoX RoPE (rotate_half pairs dimension i with i + head_dim/2)
//     x += Wo · softmax(q k^T / sqrt(head_dim), causal) v   (GQA)
//     h = rms_norm(x) * ffn_norm
//     dense: x += down(silu(gate h) * up h)
//     moe:   p = softmax(router h); top-k experts; weights p_k / sum(p_topk)
//            (norm_topk_prob); x += sum_k w_k down_k(silu(gate_k h) * up_k h)
//   logits = output(rms_norm(x) * output_norm)   (output tied to token_embd when absent)
// head_dim is attention.key_length, which need not be n_embd / n_head.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/tiny_gguf.h"

namespace ferrite::test {

struct Qwen3Config {
  bool moe = false;
  int64_t n_vocab = 40, n_embd = 32, n_layer = 2, n_head = 4, n_head_kv = 2, head_dim = 16;
  int64_t n_ff = 48;                                         // dense layers
  int64_t n_expert = 6, n_expert_used = 2, n_ff_exp = 24;    // moe layers
  bool tied_output = true;
  double eps = 1e-6, freq_base = 1000000.0;
  int64_t n_ctx = 64;
  // Alternatives of the reference only (the file is the same), for the
  // tests to show that a wrong choice is detected.
  bool ref_neox = true;       // false: adjacent RoPE pairs (llama's)
  bool ref_norm_topk = true;  // false: top-k probabilities not renormalised
};

class TinyQwen3 {
 public:
  explicit TinyQwen3(const Qwen3Config& c, uint32_t seed = 11) : c_(c), g_(c.moe ? "qwen3moe" : "qwen3", seed) {
    g_.set_u32("context_length", static_cast<uint32_t>(c.n_ctx));
    g_.set_u32("embedding_length", static_cast<uint32_t>(c.n_embd));
    g_.set_u32("block_count", static_cast<uint32_t>(c.n_layer));
    g_.set_u32("feed_forward_length", static_cast<uint32_t>(c.moe ? c.n_ff_exp : c.n_ff));
    g_.set_u32("attention.head_count", static_cast<uint32_t>(c.n_head));
    g_.set_u32("attention.head_count_kv", static_cast<uint32_t>(c.n_head_kv));
    g_.set_u32("attention.key_length", static_cast<uint32_t>(c.head_dim));
    g_.set_u32("attention.value_length", static_cast<uint32_t>(c.head_dim));
    g_.set_f32("attention.layer_norm_rms_epsilon", static_cast<float>(c.eps));
    g_.set_f32("rope.freq_base", static_cast<float>(c.freq_base));
    if (c.moe) {
      g_.set_u32("expert_count", static_cast<uint32_t>(c.n_expert));
      g_.set_u32("expert_used_count", static_cast<uint32_t>(c.n_expert_used));
      g_.set_u32("expert_feed_forward_length", static_cast<uint32_t>(c.n_ff_exp));
    }
    const int64_t n_q = c.n_head * c.head_dim, n_kv = c.n_head_kv * c.head_dim;
    g_.add("token_embd.weight", {c.n_embd, c.n_vocab}, 1.0f);
    for (int64_t il = 0; il < c.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      g_.add_norm(p + "attn_norm.weight", c.n_embd);
      g_.add_linear(p + "attn_q.weight", c.n_embd, n_q);
      g_.add_linear(p + "attn_k.weight", c.n_embd, n_kv);
      g_.add_linear(p + "attn_v.weight", c.n_embd, n_kv);
      g_.add_norm(p + "attn_q_norm.weight", c.head_dim);
      g_.add_norm(p + "attn_k_norm.weight", c.head_dim);
      g_.add_linear(p + "attn_output.weight", n_q, c.n_embd);
      g_.add_norm(p + "ffn_norm.weight", c.n_embd);
      if (c.moe) {
        // The router spread wide enough that the top-k choice is clear-cut.
        g_.add(p + "ffn_gate_inp.weight", {c.n_embd, c.n_expert}, 1.0f);
        const float s_in = 1.0f / std::sqrt(static_cast<float>(c.n_embd));
        const float s_ff = 1.0f / std::sqrt(static_cast<float>(c.n_ff_exp));
        g_.add(p + "ffn_gate_exps.weight", {c.n_embd, c.n_ff_exp, c.n_expert}, s_in);
        g_.add(p + "ffn_up_exps.weight", {c.n_embd, c.n_ff_exp, c.n_expert}, s_in);
        g_.add(p + "ffn_down_exps.weight", {c.n_ff_exp, c.n_embd, c.n_expert}, s_ff);
      } else {
        g_.add_linear(p + "ffn_gate.weight", c.n_embd, c.n_ff);
        g_.add_linear(p + "ffn_up.weight", c.n_embd, c.n_ff);
        g_.add_linear(p + "ffn_down.weight", c.n_ff, c.n_embd);
      }
    }
    g_.add_norm("output_norm.weight", c.n_embd);
    if (!c.tied_output) g_.add_linear("output.weight", c.n_embd, c.n_vocab);
    g_.write();
  }

  const std::filesystem::path& path() const { return g_.path(); }
  Qwen3Config& config() { return c_; }

  // Logits [n, n_vocab] of one sequence at positions 0..n-1.
  ref::Rows reference(const std::vector<int32_t>& tokens) const {
    const int64_t n = static_cast<int64_t>(tokens.size()), n_embd = c_.n_embd, hd = c_.head_dim;
    const int64_t n_q = c_.n_head * hd, n_kv = c_.n_head_kv * hd;
    std::vector<int32_t> pos(tokens.size());
    std::iota(pos.begin(), pos.end(), 0);
    const ref::Rope rope{hd, c_.ref_neox, c_.freq_base, 1.0};
    ref::Rows x(static_cast<size_t>(n * n_embd));
    const auto& emb = g_.t("token_embd.weight");
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t d = 0; d < n_embd; ++d) x[i * n_embd + d] = emb[tokens[i] * n_embd + d];
    }
    for (int64_t il = 0; il < c_.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      ref::Rows h = x;
      ref::rms_norm(h, n_embd, g_.t(p + "attn_norm.weight"), c_.eps);
      ref::Rows q = ref::linear(h, n, g_.t(p + "attn_q.weight"), n_embd, n_q);
      ref::Rows k = ref::linear(h, n, g_.t(p + "attn_k.weight"), n_embd, n_kv);
      const ref::Rows v = ref::linear(h, n, g_.t(p + "attn_v.weight"), n_embd, n_kv);
      ref::rms_norm(q, hd, g_.t(p + "attn_q_norm.weight"), c_.eps);
      ref::rms_norm(k, hd, g_.t(p + "attn_k_norm.weight"), c_.eps);
      ref::rope(q, n, c_.n_head, hd, pos, rope);
      ref::rope(k, n, c_.n_head_kv, hd, pos, rope);
      const ref::Rows a =
          ref::attention(q, k, v, pos, n, c_.n_head, c_.n_head_kv, hd, 1.0 / std::sqrt(static_cast<double>(hd)), 0);
      ref::add_inplace(x, ref::linear(a, n, g_.t(p + "attn_output.weight"), n_q, n_embd));

      h = x;
      ref::rms_norm(h, n_embd, g_.t(p + "ffn_norm.weight"), c_.eps);
      if (c_.moe) {
        ref::add_inplace(x, moe(h, n, p));
      } else {
        ref::add_inplace(x, ref::gated_ffn(h, n, n_embd, c_.n_ff, g_.t(p + "ffn_gate.weight").data(),
                                           g_.t(p + "ffn_up.weight").data(), g_.t(p + "ffn_down.weight").data(),
                                           ref::silu));
      }
    }
    ref::rms_norm(x, n_embd, g_.t("output_norm.weight"), c_.eps);
    const auto& out = g_.t(c_.tied_output ? "token_embd.weight" : "output.weight");
    return ref::linear(x, n, out, n_embd, c_.n_vocab);
  }

 private:
  // The expert mixture of the normed rows h [n, n_embd].
  ref::Rows moe(const ref::Rows& h, int64_t n, const std::string& p) const {
    const int64_t n_embd = c_.n_embd, n_ff = c_.n_ff_exp, n_exp = c_.n_expert;
    const ref::Rows logits = ref::linear(h, n, g_.t(p + "ffn_gate_inp.weight"), n_embd, n_exp);
    const auto& gate = g_.t(p + "ffn_gate_exps.weight");
    const auto& up = g_.t(p + "ffn_up_exps.weight");
    const auto& down = g_.t(p + "ffn_down_exps.weight");
    ref::Rows out(h.size(), 0.0);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> prob(logits.begin() + t * n_exp, logits.begin() + (t + 1) * n_exp);
      ref::softmax(prob);
      std::vector<int64_t> order(static_cast<size_t>(n_exp));
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return prob[a] > prob[b]; });
      double sum = 0;
      for (int64_t j = 0; j < c_.n_expert_used; ++j) sum += prob[order[j]];
      if (!c_.ref_norm_topk) sum = 1.0;
      const ref::Rows row(h.begin() + t * n_embd, h.begin() + (t + 1) * n_embd);
      for (int64_t j = 0; j < c_.n_expert_used; ++j) {
        const int64_t e = order[j];
        const ref::Rows y = ref::gated_ffn(row, 1, n_embd, n_ff, gate.data() + e * n_ff * n_embd,
                                           up.data() + e * n_ff * n_embd, down.data() + e * n_embd * n_ff, ref::silu);
        for (int64_t d = 0; d < n_embd; ++d) out[t * n_embd + d] += prob[e] / sum * y[d];
      }
    }
    return out;
  }

  Qwen3Config c_;
  TinyGguf g_;
};

}  // namespace ferrite::test
