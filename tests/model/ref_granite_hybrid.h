// granitehybrid: a tiny random GGUF laid out as llama.cpp's converter writes
// GraniteMoeHybridForCausalLM (per-layer head_count_kv, 0 on the Mamba-2
// layers; rope.scaling.finetuned false without RoPE), and a double-precision
// reference forward written from the published definition (transformers'
// GraniteMoeHybridForCausalLM):
//   x = embed(tokens) * embedding_multiplier
//   per layer:
//     h = rms_norm(x) * attn_norm
//     x += residual_multiplier * (Mamba-2 mixer (ref_mamba2.h) | GQA attention(h), scores * attention_multiplier)
//     h = rms_norm(x) * ffn_norm
//     x += residual_multiplier * (experts(h) + shared_mlp(h))      (or a dense SwiGLU)
//       experts: softmax over the top-k router logits, SwiGLU experts;
//       shared_mlp: down(silu(gate h) * up h), ungated
//   logits = output(rms_norm(x) * output_norm) / logits_scaling
// Granite 4.0 H has no position embedding in its attention ("nope"); rope = true
// makes a file with RoPE (adjacent pairs, as llama.cpp's Granite) for the other case.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/ref_mamba2.h"
#include "model/tiny_gguf.h"

namespace ferrite::test {

struct GraniteHybridConfig {
  int64_t n_vocab = 40, n_embd = 32, n_layer = 3, n_head = 4, n_head_kv = 2, head_dim = 8;
  int64_t attention_layer = 1;  // the others are Mamba-2
  bool moe = true;
  int64_t n_expert = 4, n_expert_used = 2, n_ff_exp = 16, n_ff_shared = 24, n_ff = 48;
  bool rope = false;
  SsmConfig ssm = [] {
    SsmConfig s;
    s.n_group = 1;
    return s;
  }();
  double eps = 1e-5, freq_base = 10000.0;
  double embedding_scale = 6.0, residual_scale = 0.35, attention_scale = 0.25, logit_scale = 4.0;
  // Reference-only quirks.
  bool ref_embedding = true, ref_residual = true, ref_attention = true, ref_logit = true, ref_shared_expert = true,
       ref_no_rope = true;
};

class TinyGraniteHybrid {
 public:
  explicit TinyGraniteHybrid(const GraniteHybridConfig& c, uint32_t seed = 37) : c_(c), g_("granitehybrid", seed) {
    g_.set_u32("context_length", 1u << 20);
    g_.set_u32("embedding_length", static_cast<uint32_t>(c.n_embd));
    g_.set_u32("block_count", static_cast<uint32_t>(c.n_layer));
    g_.set_u32("feed_forward_length", static_cast<uint32_t>(c.moe ? c.n_ff_exp : c.n_ff));
    g_.set_u32("attention.head_count", static_cast<uint32_t>(c.n_head));
    std::vector<gguf::Value> kv;
    for (int64_t il = 0; il < c.n_layer; ++il) {
      kv.push_back(gguf::Value::u32(il == c.attention_layer ? static_cast<uint32_t>(c.n_head_kv) : 0u));
    }
    g_.writer().set("granitehybrid.attention.head_count_kv", gguf::Value::array(gguf::ValueType::UINT32, kv));
    g_.writer().set("granitehybrid.rope.scaling.finetuned", gguf::Value::boolean(c.rope));
    g_.set_f32("attention.layer_norm_rms_epsilon", static_cast<float>(c.eps));
    g_.set_f32("rope.freq_base", static_cast<float>(c.freq_base));
    g_.set_f32("embedding_scale", static_cast<float>(c.embedding_scale));
    g_.set_f32("residual_scale", static_cast<float>(c.residual_scale));
    g_.set_f32("attention.scale", static_cast<float>(c.attention_scale));
    g_.set_f32("logit_scale", static_cast<float>(c.logit_scale));
    if (c.moe) {
      g_.set_u32("expert_count", static_cast<uint32_t>(c.n_expert));
      g_.set_u32("expert_used_count", static_cast<uint32_t>(c.n_expert_used));
      g_.set_u32("expert_shared_feed_forward_length", static_cast<uint32_t>(c.n_ff_shared));
    }
    ref::set_ssm_keys(g_, c.ssm);
    const int64_t n_q = c.n_head * c.head_dim, n_kv = c.n_head_kv * c.head_dim;
    g_.add("token_embd.weight", {c.n_embd, c.n_vocab}, 0.3f);
    for (int64_t il = 0; il < c.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      g_.add_norm(p + "attn_norm.weight", c.n_embd);
      if (il == c.attention_layer) {
        g_.add_linear(p + "attn_q.weight", c.n_embd, n_q);
        g_.add_linear(p + "attn_k.weight", c.n_embd, n_kv);
        g_.add_linear(p + "attn_v.weight", c.n_embd, n_kv);
        g_.add_linear(p + "attn_output.weight", n_q, c.n_embd);
      } else {
        ref::add_ssm_layer(g_, c.ssm, c.n_embd, il);
      }
      g_.add_norm(p + "ffn_norm.weight", c.n_embd);
      if (c.moe) {
        g_.add(p + "ffn_gate_inp.weight", {c.n_embd, c.n_expert}, 0.5f);
        const float s = 1.0f / std::sqrt(static_cast<float>(c.n_embd));
        g_.add(p + "ffn_gate_exps.weight", {c.n_embd, c.n_ff_exp, c.n_expert}, s);
        g_.add(p + "ffn_up_exps.weight", {c.n_embd, c.n_ff_exp, c.n_expert}, s);
        g_.add(p + "ffn_down_exps.weight", {c.n_ff_exp, c.n_embd, c.n_expert},
               1.0f / std::sqrt(static_cast<float>(c.n_ff_exp)));
        g_.add_linear(p + "ffn_gate_shexp.weight", c.n_embd, c.n_ff_shared);
        g_.add_linear(p + "ffn_up_shexp.weight", c.n_embd, c.n_ff_shared);
        g_.add_linear(p + "ffn_down_shexp.weight", c.n_ff_shared, c.n_embd);
      } else {
        g_.add_linear(p + "ffn_gate.weight", c.n_embd, c.n_ff);
        g_.add_linear(p + "ffn_up.weight", c.n_embd, c.n_ff);
        g_.add_linear(p + "ffn_down.weight", c.n_ff, c.n_embd);
      }
    }
    g_.add_norm("output_norm.weight", c.n_embd);
    g_.write();
  }

  const std::filesystem::path& path() const { return g_.path(); }
  GraniteHybridConfig& config() { return c_; }

  ref::Rows reference(const std::vector<int32_t>& tokens) const {
    const auto n = static_cast<int64_t>(tokens.size());
    const int64_t ne = c_.n_embd, hd = c_.head_dim, n_q = c_.n_head * hd, n_kv = c_.n_head_kv * hd;
    std::vector<int32_t> pos(tokens.size());
    std::iota(pos.begin(), pos.end(), 0);
    const double res = c_.ref_residual ? c_.residual_scale : 1.0;
    const double embd = c_.ref_embedding ? c_.embedding_scale : 1.0;
    const double att = c_.ref_attention ? c_.attention_scale : 1.0 / std::sqrt(static_cast<double>(hd));
    const bool rope = c_.ref_no_rope ? c_.rope : !c_.rope;
    ref::Rows x(static_cast<size_t>(n * ne));
    const auto& emb = g_.t("token_embd.weight");
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t d = 0; d < ne; ++d) x[i * ne + d] = embd * emb[tokens[i] * ne + d];
    }
    auto add_scaled = [res](ref::Rows& to, const ref::Rows& y) {
      for (size_t i = 0; i < to.size(); ++i) to[i] += res * y[i];
    };
    for (int64_t il = 0; il < c_.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      ref::Rows h = x;
      ref::rms_norm(h, ne, g_.t(p + "attn_norm.weight"), c_.eps);
      if (il == c_.attention_layer) {
        ref::Rows q = ref::linear(h, n, g_.t(p + "attn_q.weight"), ne, n_q);
        ref::Rows k = ref::linear(h, n, g_.t(p + "attn_k.weight"), ne, n_kv);
        const ref::Rows v = ref::linear(h, n, g_.t(p + "attn_v.weight"), ne, n_kv);
        if (rope) {
          const ref::Rope r{hd, /*neox=*/false, c_.freq_base, 1.0};
          ref::rope(q, n, c_.n_head, hd, pos, r);
          ref::rope(k, n, c_.n_head_kv, hd, pos, r);
        }
        const ref::Rows a = ref::attention(q, k, v, pos, n, c_.n_head, c_.n_head_kv, hd, att, 0);
        add_scaled(x, ref::linear(a, n, g_.t(p + "attn_output.weight"), n_q, ne));
      } else {
        add_scaled(x, ref::ssm_mixer(g_, c_.ssm, ne, il, h, n, c_.eps));
      }
      h = x;
      ref::rms_norm(h, ne, g_.t(p + "ffn_norm.weight"), c_.eps);
      add_scaled(x, c_.moe ? experts(p, h, n) : ref::gated_ffn(h, n, ne, c_.n_ff, g_.t(p + "ffn_gate.weight").data(),
                                                               g_.t(p + "ffn_up.weight").data(),
                                                               g_.t(p + "ffn_down.weight").data(), ref::silu));
    }
    ref::rms_norm(x, ne, g_.t("output_norm.weight"), c_.eps);
    ref::Rows logits = ref::linear(x, n, g_.t("token_embd.weight"), ne, c_.n_vocab);
    if (c_.ref_logit) {
      for (double& l : logits) l /= c_.logit_scale;
    }
    return logits;
  }

 private:
  ref::Rows experts(const std::string& p, const ref::Rows& h, int64_t n) const {
    const int64_t ne = c_.n_embd, ff = c_.n_ff_exp, E = c_.n_expert;
    const ref::Rows logits = ref::linear(h, n, g_.t(p + "ffn_gate_inp.weight"), ne, E);
    ref::Rows out = c_.ref_shared_expert
                        ? ref::gated_ffn(h, n, ne, c_.n_ff_shared, g_.t(p + "ffn_gate_shexp.weight").data(),
                                         g_.t(p + "ffn_up_shexp.weight").data(),
                                         g_.t(p + "ffn_down_shexp.weight").data(), ref::silu)
                        : ref::Rows(static_cast<size_t>(n * ne), 0.0);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<int64_t> order(static_cast<size_t>(E));
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + c_.n_expert_used, order.end(),
                        [&](int64_t a, int64_t b) { return logits[t * E + a] > logits[t * E + b]; });
      std::vector<double> w;
      for (int64_t k = 0; k < c_.n_expert_used; ++k) w.push_back(logits[t * E + order[k]]);
      ref::softmax(w);  // over the chosen logits only
      const ref::Rows ht(h.begin() + t * ne, h.begin() + (t + 1) * ne);
      for (int64_t k = 0; k < c_.n_expert_used; ++k) {
        const int64_t e = order[static_cast<size_t>(k)];
        const ref::Rows y = ref::gated_ffn(ht, 1, ne, ff, g_.t(p + "ffn_gate_exps.weight").data() + e * ne * ff,
                                           g_.t(p + "ffn_up_exps.weight").data() + e * ne * ff,
                                           g_.t(p + "ffn_down_exps.weight").data() + e * ff * ne, ref::silu);
        for (int64_t d = 0; d < ne; ++d) out[t * ne + d] += w[static_cast<size_t>(k)] * y[d];
      }
    }
    return out;
  }

  GraniteHybridConfig c_;
  TinyGguf g_;
};

}  // namespace ferrite::test
