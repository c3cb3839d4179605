// granite: a tiny random GGUF laid out as llama.cpp's converter writes the
// architecture, and a reference forward written from its published
// definition (Hugging Face transformers' GraniteForCausalLM: the Llama
// decoder with embedding_multiplier, attention_multiplier,
// residual_multiplier and logits_scaling):
//   x = embed(tokens) * embedding_multiplier
//   per layer:
//     h = rms_norm(x) * attn_norm
//     q, k, v = h Wq, h Wk, h Wv
//     q, k = RoPE (llama.cpp's converter stores Llama-family q/k rows so that
//            pairs are adjacent: (2i, 2i+1))
//     x += residual_multiplier * Wo · softmax(q k^T * attention_multiplier, causal) v   (GQA)
//     h = rms_norm(x) * ffn_norm
//     x += residual_multiplier * down(silu(gate h) * up h)
//   logits = output(rms_norm(x) * output_norm) / logits_scaling   (output tied when absent)
#pragma once

#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/tiny_gguf.h"

namespace ferrite::test {

struct GraniteConfig {
  int64_t n_vocab = 40, n_embd = 32, n_layer = 2, n_head = 4, n_head_kv = 2, head_dim = 8, n_ff = 48;
  bool tied_output = true;
  double eps = 1e-6, freq_base = 10000.0;
  double embedding_scale = 6.0, residual_scale = 0.35, attention_scale = 0.25, logit_scale = 4.0;
  int64_t n_ctx = 64;
  // Alternatives of the reference only (the file is the same), for the tests
  // to show that each multiplier is seen.
  bool ref_embedding = true, ref_residual = true, ref_attention = true, ref_logit = true;
};

class TinyGranite {
 public:
  explicit TinyGranite(const GraniteConfig& c, uint32_t seed = 17) : c_(c), g_("granite", seed) {
    g_.set_u32("context_length", static_cast<uint32_t>(c.n_ctx));
    g_.set_u32("embedding_length", static_cast<uint32_t>(c.n_embd));
    g_.set_u32("block_count", static_cast<uint32_t>(c.n_layer));
    g_.set_u32("feed_forward_length", static_cast<uint32_t>(c.n_ff));
    g_.set_u32("attention.head_count", static_cast<uint32_t>(c.n_head));
    g_.set_u32("attention.head_count_kv", static_cast<uint32_t>(c.n_head_kv));
    g_.set_f32("attention.layer_norm_rms_epsilon", static_cast<float>(c.eps));
    g_.set_f32("rope.freq_base", static_cast<float>(c.freq_base));
    g_.set_f32("embedding_scale", static_cast<float>(c.embedding_scale));
    g_.set_f32("residual_scale", static_cast<float>(c.residual_scale));
    g_.set_f32("attention.scale", static_cast<float>(c.attention_scale));
    g_.set_f32("logit_scale", static_cast<float>(c.logit_scale));
    const int64_t n_q = c.n_head * c.head_dim, n_kv = c.n_head_kv * c.head_dim;
    g_.add("token_embd.weight", {c.n_embd, c.n_vocab}, 0.3f);
    for (int64_t il = 0; il < c.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      g_.add_norm(p + "attn_norm.weight", c.n_embd);
      g_.add_linear(p + "attn_q.weight", c.n_embd, n_q);
      g_.add_linear(p + "attn_k.weight", c.n_embd, n_kv);
      g_.add_linear(p + "attn_v.weight", c.n_embd, n_kv);
      g_.add_linear(p + "attn_output.weight", n_q, c.n_embd);
      g_.add_norm(p + "ffn_norm.weight", c.n_embd);
      g_.add_linear(p + "ffn_gate.weight", c.n_embd, c.n_ff);
      g_.add_linear(p + "ffn_up.weight", c.n_embd, c.n_ff);
      g_.add_linear(p + "ffn_down.weight", c.n_ff, c.n_embd);
    }
    g_.add_norm("output_norm.weight", c.n_embd);
    if (!c.tied_output) g_.add_linear("output.weight", c.n_embd, c.n_vocab);
    g_.write();
  }

  const std::filesystem::path& path() const { return g_.path(); }
  GraniteConfig& config() { return c_; }

  // Logits [n, n_vocab] of one sequence at positions 0..n-1.
  ref::Rows reference(const std::vector<int32_t>& tokens) const {
    const int64_t n = static_cast<int64_t>(tokens.size()), n_embd = c_.n_embd, hd = c_.head_dim;
    const int64_t n_q = c_.n_head * hd, n_kv = c_.n_head_kv * hd;
    std::vector<int32_t> pos(tokens.size());
    std::iota(pos.begin(), pos.end(), 0);
    const ref::Rope rope{hd, /*neox=*/false, c_.freq_base, 1.0};
    const double embd = c_.ref_embedding ? c_.embedding_scale : 1.0;
    const double res = c_.ref_residual ? c_.residual_scale : 1.0;
    const double att = c_.ref_attention ? c_.attention_scale : 1.0 / std::sqrt(static_cast<double>(hd));
    ref::Rows x(static_cast<size_t>(n * n_embd));
    const auto& emb = g_.t("token_embd.weight");
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t d = 0; d < n_embd; ++d) x[i * n_embd + d] = embd * emb[tokens[i] * n_embd + d];
    }
    auto add_scaled = [res](ref::Rows& to, const ref::Rows& y) {
      for (size_t i = 0; i < to.size(); ++i) to[i] += res * y[i];
    };
    for (int64_t il = 0; il < c_.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      ref::Rows h = x;
      ref::rms_norm(h, n_embd, g_.t(p + "attn_norm.weight"), c_.eps);
      ref::Rows q = ref::linear(h, n, g_.t(p + "attn_q.weight"), n_embd, n_q);
      ref::Rows k = ref::linear(h, n, g_.t(p + "attn_k.weight"), n_embd, n_kv);
      const ref::Rows v = ref::linear(h, n, g_.t(p + "attn_v.weight"), n_embd, n_kv);
      ref::rope(q, n, c_.n_head, hd, pos, rope);
      ref::rope(k, n, c_.n_head_kv, hd, pos, rope);
      const ref::Rows a = ref::attention(q, k, v, pos, n, c_.n_head, c_.n_head_kv, hd, att, 0);
      add_scaled(x, ref::linear(a, n, g_.t(p + "attn_output.weight"), n_q, n_embd));

      h = x;
      ref::rms_norm(h, n_embd, g_.t(p + "ffn_norm.weight"), c_.eps);
      add_scaled(x, ref::gated_ffn(h, n, n_embd, c_.n_ff, g_.t(p + "ffn_gate.weight").data(),
                                   g_.t(p + "ffn_up.weight").data(), g_.t(p + "ffn_down.weight").data(), ref::silu));
    }
    ref::rms_norm(x, n_embd, g_.t("output_norm.weight"), c_.eps);
    const auto& out = g_.t(c_.tied_output ? "token_embd.weight" : "output.weight");
    ref::Rows logits = ref::linear(x, n, out, n_embd, c_.n_vocab);
    if (c_.ref_logit) {
      for (double& l : logits) l /= c_.logit_scale;
    }
    return logits;
  }

 private:
  GraniteConfig c_;
  TinyGguf g_;
};

}  // namespace ferrite::test
