// gpt-oss: a tiny random GGUF in the layout of ik_llama.cpp's gpt-oss
// (LLM_ARCH_OPENAI_MOE: tensor names, shapes, metadata keys; facts only) and
// a double-precision reference forward written from the architecture's
// definition, independent of src/:
//   x = embed(tokens)
//   per layer il:
//     h = rms_norm(x) * attn_norm
//     q, k, v = h Wq + bq, h Wk + bk, h Wv + bv; q, k: NeoX RoPE with YaRN
//     scores = q k^T / sqrt(head_dim), causal; on even layers also within the
//       sliding window (pos_q - pos_k < window)
//     p = softmax over the visible cells and head h's sink logit (the sink
//       joins the denominator, contributes no value)
//     x += Wo (p v) + bo
//     h = rms_norm(x) * post_attention_norm
//     logits_e = h Wr + br; the top-k experts by logit; weights = softmax of
//       their k logits
//     y_e = down_e(swiglu_oai(gate_e h + bg_e, up_e h + bu_e)) + bd_e
//       swiglu_oai(g, u) = g' sigmoid(1.702 g') (u' + 1), g' = min(g, 7),
//       u' = clamp(u, -7, 7)
//     x += sum_e weight_e y_e
//   logits = output(rms_norm(x) * output_norm)
// f16 roundings where llama.cpp's CPU path has them (ref_common.h).
// The reference's switches turn each quirk off (the file stays the same),
// for the tests to show that each is seen.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/tiny_families.h"
#include "model/tiny_gguf.h"

namespace ferrite::test {

struct GptOssConfig {
  int64_t n_vocab = 320, n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 2, head_dim = 64;
  int64_t n_expert = 4, n_expert_used = 2, n_ff = 32, window = 6;
  double eps = 1e-5, freq_base = 10000.0;
  double yarn_factor = 4.0;  // rope.scaling.factor (YaRN)
  int64_t yarn_orig_ctx = 32, n_ctx = 256;
  // rope.scaling.yarn_truncate: true (the default: the files the goldens were
  // made of, which llama.cpp and ik_llama.cpp run with YaRN's correction range
  // rounded), false, or none (as llama.cpp's converter writes gpt-oss: the
  // engine then leaves the range unrounded, as gpt-oss was trained).
  std::optional<bool> yarn_truncate = true;
  float expert_scale = 5.0f;  // expert gate/up weights' spread: the clamp at 7 is reached
  // Alternatives of the reference only.
  bool ref_sinks = true, ref_sliding = true, ref_clamp = true;
  bool ref_sliding_odd = false;  // the window on the odd layers instead of the even ones
  bool ref_other_rounding = false;  // YaRN's range rounded where the file says unrounded, and the reverse
};

class TinyGptOss {
 public:
  explicit TinyGptOss(const GptOssConfig& c, uint32_t seed = 29) : c_(c), g_("gpt-oss", seed) {
    tiny_family_detail::add_vocab(g_);
    g_.set_u32("context_length", static_cast<uint32_t>(c.n_ctx));
    g_.set_u32("embedding_length", static_cast<uint32_t>(c.n_embd));
    g_.set_u32("block_count", static_cast<uint32_t>(c.n_layer));
    g_.set_u32("feed_forward_length", static_cast<uint32_t>(c.n_ff));
    g_.set_u32("expert_feed_forward_length", static_cast<uint32_t>(c.n_ff));
    g_.set_u32("expert_count", static_cast<uint32_t>(c.n_expert));
    g_.set_u32("expert_used_count", static_cast<uint32_t>(c.n_expert_used));
    g_.set_u32("attention.head_count", static_cast<uint32_t>(c.n_head));
    g_.set_u32("attention.head_count_kv", static_cast<uint32_t>(c.n_head_kv));
    g_.set_u32("attention.key_length", static_cast<uint32_t>(c.head_dim));
    g_.set_u32("attention.value_length", static_cast<uint32_t>(c.head_dim));
    g_.set_u32("attention.sliding_window", static_cast<uint32_t>(c.window));
    g_.set_f32("attention.layer_norm_rms_epsilon", static_cast<float>(c.eps));
    g_.set_u32("rope.dimension_count", static_cast<uint32_t>(c.head_dim));
    g_.set_f32("rope.freq_base", static_cast<float>(c.freq_base));
    g_.set_str("rope.scaling.type", "yarn");
    g_.set_f32("rope.scaling.factor", static_cast<float>(c.yarn_factor));
    g_.set_u32("rope.scaling.original_context_length", static_cast<uint32_t>(c.yarn_orig_ctx));
    if (c.yarn_truncate) g_.set_bool("rope.scaling.yarn_truncate", *c.yarn_truncate);
    const int64_t n_q = c.n_head * c.head_dim, n_kv = c.n_head_kv * c.head_dim, E = c.n_expert;
    const float exp_sd = c.expert_scale / std::sqrt(static_cast<float>(c.n_embd));
    g_.add("token_embd.weight", {c.n_embd, c.n_vocab}, 1.0f);
    for (int64_t il = 0; il < c.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      g_.add_norm(p + "attn_norm.weight", c.n_embd);
      g_.add_linear(p + "attn_q.weight", c.n_embd, n_q);
      g_.add(p + "attn_q.bias", {n_q}, 0.3f);
      g_.add_linear(p + "attn_k.weight", c.n_embd, n_kv);
      g_.add(p + "attn_k.bias", {n_kv}, 0.3f);
      g_.add_linear(p + "attn_v.weight", c.n_embd, n_kv);
      g_.add(p + "attn_v.bias", {n_kv}, 0.3f);
      g_.add_linear(p + "attn_output.weight", n_q, c.n_embd);
      g_.add(p + "attn_output.bias", {c.n_embd}, 0.3f);
      g_.add(p + "attn_sinks.weight", {c.n_head}, 1.0f, 1.0f);
      g_.add_norm(p + "post_attention_norm.weight", c.n_embd);
      g_.add_linear(p + "ffn_gate_inp.weight", c.n_embd, E);
      g_.add(p + "ffn_gate_inp.bias", {E}, 0.5f);
      g_.add(p + "ffn_gate_exps.weight", {c.n_embd, c.n_ff, E}, exp_sd);
      g_.add(p + "ffn_gate_exps.bias", {c.n_ff, E}, 1.0f);
      g_.add(p + "ffn_up_exps.weight", {c.n_embd, c.n_ff, E}, exp_sd);
      g_.add(p + "ffn_up_exps.bias", {c.n_ff, E}, 1.0f);
      g_.add(p + "ffn_down_exps.weight", {c.n_ff, c.n_embd, E}, 0.3f / std::sqrt(static_cast<float>(c.n_ff)));
      g_.add(p + "ffn_down_exps.bias", {c.n_embd, E}, 0.3f);
    }
    g_.add_norm("output_norm.weight", c.n_embd);
    g_.add_linear("output.weight", c.n_embd, c.n_vocab);
    g_.write();
  }

  const std::filesystem::path& path() const { return g_.path(); }
  GptOssConfig& config() { return c_; }

  // Logits [n, n_vocab] of one sequence at positions 0..n-1.
  ref::Rows reference(const std::vector<int32_t>& tokens) const {
    const int64_t n = static_cast<int64_t>(tokens.size()), n_embd = c_.n_embd, hd = c_.head_dim;
    const int64_t n_q = c_.n_head * hd, n_kv = c_.n_head_kv * hd;
    std::vector<int32_t> pos(tokens.size());
    std::iota(pos.begin(), pos.end(), 0);
    ref::Rows x(static_cast<size_t>(n * n_embd));
    const auto& emb = g_.t("token_embd.weight");
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t d = 0; d < n_embd; ++d) x[i * n_embd + d] = emb[tokens[i] * n_embd + d];
    }
    for (int64_t il = 0; il < c_.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      auto w = [&](const char* s) -> const std::vector<float>& { return g_.t(p + s); };
      ref::Rows h = x;
      ref::rms_norm(h, n_embd, w("attn_norm.weight"), c_.eps);
      ref::Rows q = linear_b(h, n, w("attn_q.weight"), w("attn_q.bias"), n_embd, n_q);
      ref::Rows k = linear_b(h, n, w("attn_k.weight"), w("attn_k.bias"), n_embd, n_kv);
      const ref::Rows v = linear_b(h, n, w("attn_v.weight"), w("attn_v.bias"), n_embd, n_kv);
      rope_yarn(q, n, c_.n_head);
      rope_yarn(k, n, c_.n_head_kv);
      const bool sliding = c_.ref_sliding && il % 2 == (c_.ref_sliding_odd ? 1 : 0);
      const ref::Rows a = attention(q, k, v, n, sliding ? c_.window : 0, w("attn_sinks.weight"));
      ref::add_inplace(x, linear_b(a, n, w("attn_output.weight"), w("attn_output.bias"), n_q, n_embd));
      h = x;
      ref::rms_norm(h, n_embd, w("post_attention_norm.weight"), c_.eps);
      ref::add_inplace(x, moe(h, n, p));
    }
    ref::rms_norm(x, n_embd, g_.t("output_norm.weight"), c_.eps);
    return ref::linear(x, n, g_.t("output.weight"), n_embd, c_.n_vocab);
  }

 private:
  static ref::Rows linear_b(const ref::Rows& x, int64_t n, const std::vector<float>& w, const std::vector<float>& b,
                            int64_t n_in, int64_t n_out) {
    ref::Rows y = ref::linear(x, n, w, n_in, n_out);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t o = 0; o < n_out; ++o) y[i * n_out + o] += b[o];
    }
    return y;
  }

  // NeoX RoPE over whole heads with YaRN (ggml's definition: the angle mixes
  // theta / factor and theta by a ramp between the correction dimensions of
  // beta_fast 32 and beta_slow 1; cos and sin scaled by 1 + 0.1 ln(factor)).
  // theta = pos * base^(-2i/d) by repeated f32 multiplication (ref_common.h).
  // The correction dimensions are rounded out (floor, ceil) where the file
  // says rope.scaling.yarn_truncate true, else left fractional (OpenAI's
  // reference, transformers' truncate false); clamped to [0, d - 1].
  void rope_yarn(ref::Rows& x, int64_t n, int64_t n_heads) const {
    const int64_t d = c_.head_dim, half = d / 2;
    const double base = c_.freq_base, nd = static_cast<double>(d);
    auto corr = [&](double beta) {
      return nd * std::log(static_cast<double>(c_.yarn_orig_ctx) / (beta * 2.0 * M_PI)) / (2.0 * std::log(base));
    };
    const bool round = c_.yarn_truncate.value_or(false) != c_.ref_other_rounding;
    const double low = std::max(0.0, round ? std::floor(corr(32.0)) : corr(32.0));
    const double high = std::min(nd - 1, round ? std::ceil(corr(1.0)) : corr(1.0));
    const double mscale = 1.0 + 0.1 * std::log(c_.yarn_factor);
    const float step = static_cast<float>(std::pow(base, -2.0 / nd));
    for (int64_t t = 0; t < n; ++t) {
      float theta_f = static_cast<float>(t);
      for (int64_t i = 0; i < half; ++i, theta_f *= step) {
        const double theta = theta_f;
        const double y = (static_cast<double>(i) - low) / std::max(0.001, high - low);
        const double mix = 1.0 - std::min(1.0, std::max(0.0, y));
        const double ang = theta / c_.yarn_factor * (1.0 - mix) + theta * mix;
        const double cs = std::cos(ang) * mscale, sn = std::sin(ang) * mscale;
        for (int64_t hh = 0; hh < n_heads; ++hh) {
          double* v = x.data() + (t * n_heads + hh) * d;
          const double x0 = v[i], x1 = v[i + half];
          v[i] = x0 * cs - x1 * sn;
          v[i + half] = x0 * sn + x1 * cs;
        }
      }
    }
  }

  // Causal GQA with the sinks in the denominator (ref_common.h's roundings).
  ref::Rows attention(const ref::Rows& q, const ref::Rows& k, const ref::Rows& v, int64_t n, int64_t window,
                      const std::vector<float>& sinks) const {
    const int64_t hd = c_.head_dim, group = c_.n_head / c_.n_head_kv;
    const int64_t n_q = c_.n_head * hd, n_kv = c_.n_head_kv * hd;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    ref::Rows out(static_cast<size_t>(n * n_q), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t h = 0; h < c_.n_head; ++h) {
        const int64_t g = h / group;
        std::vector<double> s;
        std::vector<int64_t> js;
        for (int64_t j = 0; j <= i; ++j) {
          if (window > 0 && i - j >= window) continue;
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d) {
            dot += ref::round_f16(q[i * n_q + h * hd + d]) * ref::round_f16(k[j * n_kv + g * hd + d]);
          }
          s.push_back(dot * scale);
          js.push_back(j);
        }
        const double sink = c_.ref_sinks ? static_cast<double>(sinks[h]) : -INFINITY;
        double max = sink;
        for (double e : s) max = std::max(max, e);
        double sum = std::isinf(sink) ? 0.0 : std::exp(sink - max);
        for (double& e : s) sum += (e = std::exp(e - max));
        for (size_t m = 0; m < js.size(); ++m) {
          const double pm = ref::round_f16(s[m] / sum);
          for (int64_t d = 0; d < hd; ++d) {
            out[i * n_q + h * hd + d] += pm * ref::round_f16(v[js[m] * n_kv + g * hd + d]);
          }
        }
      }
    }
    return out;
  }

  double swiglu_oai(double g, double u) const {
    constexpr double kAlpha = 1.702, kLimit = 7.0;
    if (c_.ref_clamp) {
      g = std::min(g, kLimit);
      u = std::min(std::max(u, -kLimit), kLimit);
    }
    return g / (1.0 + std::exp(-kAlpha * g)) * (u + 1.0);
  }

  ref::Rows moe(const ref::Rows& h, int64_t n, const std::string& p) const {
    const int64_t n_embd = c_.n_embd, E = c_.n_expert, K = c_.n_expert_used, F = c_.n_ff;
    const ref::Rows logits = linear_b(h, n, g_.t(p + "ffn_gate_inp.weight"), g_.t(p + "ffn_gate_inp.bias"), n_embd, E);
    const auto& wg = g_.t(p + "ffn_gate_exps.weight");
    const auto& wu = g_.t(p + "ffn_up_exps.weight");
    const auto& wd = g_.t(p + "ffn_down_exps.weight");
    const auto& bg = g_.t(p + "ffn_gate_exps.bias");
    const auto& bu = g_.t(p + "ffn_up_exps.bias");
    const auto& bd = g_.t(p + "ffn_down_exps.bias");
    ref::Rows out(static_cast<size_t>(n * n_embd), 0.0);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<int64_t> order(static_cast<size_t>(E));
      std::iota(order.begin(), order.end(), 0);
      const double* lt = logits.data() + t * E;
      std::stable_sort(order.begin(), order.end(), [lt](int64_t a, int64_t b) { return lt[a] > lt[b]; });
      std::vector<double> wsel(static_cast<size_t>(K));
      for (int64_t j = 0; j < K; ++j) wsel[j] = lt[order[j]];
      ref::softmax(wsel);
      const ref::Rows ht(h.begin() + t * n_embd, h.begin() + (t + 1) * n_embd);
      for (int64_t j = 0; j < K; ++j) {
        const int64_t e = order[j];
        ref::Rows a = ref::linear(ht, 1, wg.data() + e * F * n_embd, n_embd, F);
        const ref::Rows u = ref::linear(ht, 1, wu.data() + e * F * n_embd, n_embd, F);
        for (int64_t f = 0; f < F; ++f) a[f] = swiglu_oai(a[f] + bg[e * F + f], u[f] + bu[e * F + f]);
        const ref::Rows y = ref::linear(a, 1, wd.data() + e * n_embd * F, F, n_embd);
        for (int64_t d = 0; d < n_embd; ++d) out[t * n_embd + d] += wsel[j] * (y[d] + bd[e * n_embd + d]);
      }
    }
    return out;
  }

  GptOssConfig c_;
  TinyGguf g_;
};

}  // namespace ferrite::test
