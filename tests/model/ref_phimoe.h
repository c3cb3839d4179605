// A double-precision reference forward of the tiny phimoe model
// (tiny_families.h make_tiny_family("phimoe")), written from transformers'
// PhimoeForCausalLM (modeling_phimoe.py, transformers 5.17) with llama.cpp's
// conventions of ref_common.h (f16 cache and attention products), reading
// the weights back from the TinyGguf:
//   x = embed(tokens)
//   per layer:
//     h = layer_norm(x) * attn_norm.weight + attn_norm.bias    (nn.LayerNorm)
//     q, k, v = h Wq + bq, h Wk + bk, h Wv + bv
//     NeoX RoPE with the LongRoPE short factors (theta_i / factor_i), cos and
//       sin times the magnitude rope.scaling.attn_factor
//     a = Wo · softmax(q k^T / sqrt(head_dim), causal, window) v + bo
//     x += a
//     h = layer_norm(x) * ffn_norm.weight + ffn_norm.bias
//     router logits s = h Wr; sparsemixer, two rounds at inference:
//       m = max of the experts left, e* its expert; mask every expert left
//       with (m - s_e) / max(|s_e|, m) > 2 jitter; w = softmax over the
//       unmasked ones at e*; then e* is removed and the round repeats
//     f = sum_j w_j expert_j(h)     (no renormalisation)
//     x += f
//   logits = output(layer_norm(x) * output_norm.weight + output_norm.bias) + output.bias
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/ref_sparsemixer.h"
#include "model/tiny_families.h"

namespace ferrite::test {

class RefPhimoe {
 public:
  // g: the file make_tiny_family("phimoe") wrote.
  explicit RefPhimoe(const TinyGguf& g) : g_(g) {
    while (g_.has("blk." + std::to_string(n_layer_) + ".attn_norm.weight")) ++n_layer_;
  }

  // Alternatives of the reference only (the file stays), for the tests to
  // show that the comparison sees each part of the definition.
  bool rms_norms = false;     // llama.cpp c392e50's RMSNorms (with the biases added)
  bool softmax_top2 = false;  // llama.cpp c392e50's router: softmax, top 2, renormalised
  int64_t window = 6;         // the file's attention.sliding_window (0: none)
  double jitter = 0.01;       // the router jitter (Phi-3.5-MoE's, the file has no key)

  ref::Rows logits(const std::vector<int32_t>& tokens) const {
    namespace d = tiny_family_detail;
    const int64_t n = static_cast<int64_t>(tokens.size()), e = d::kEmbd;
    std::vector<int32_t> pos(tokens.size());
    std::iota(pos.begin(), pos.end(), 0);
    ref::Rows x(static_cast<size_t>(n * e));
    const auto& emb = g_.t("token_embd.weight");
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < e; ++c) x[i * e + c] = emb[tokens[i] * e + c];
    }
    for (int64_t il = 0; il < n_layer_; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      ref::add_inplace(x, attention(norm(x, p + "attn_norm"), n, p, pos));
      ref::add_inplace(x, experts(norm(x, p + "ffn_norm"), n, p));
    }
    ref::Rows out = ref::linear(norm(x, "output_norm"), n, g_.t("output.weight"), e, d::kVocab);
    add_bias(out, "output.bias");
    return out;
  }

 private:
  static constexpr double kEps = 1e-5;

  void add_bias(ref::Rows& y, const std::string& name) const {
    const auto& b = g_.t(name);
    for (size_t i = 0; i < y.size(); ++i) y[i] += b[i % b.size()];
  }

  // LayerNorm (or, as the alternative, RMSNorm) of every row, * weight + bias.
  ref::Rows norm(const ref::Rows& x, const std::string& name) const {
    const int64_t dim = tiny_family_detail::kEmbd, rows = static_cast<int64_t>(x.size()) / dim;
    const auto& w = g_.t(name + ".weight");
    const auto& b = g_.t(name + ".bias");
    ref::Rows y(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      const double* v = x.data() + r * dim;
      double mean = 0;
      for (int64_t c = 0; c < dim; ++c) mean += v[c];
      mean = rms_norms ? 0.0 : mean / static_cast<double>(dim);
      double var = 0;
      for (int64_t c = 0; c < dim; ++c) var += (v[c] - mean) * (v[c] - mean);
      const double inv = 1.0 / std::sqrt(var / static_cast<double>(dim) + kEps);
      for (int64_t c = 0; c < dim; ++c) y[r * dim + c] = (v[c] - mean) * inv * w[c] + b[c];
    }
    return y;
  }

  // NeoX RoPE with the short LongRoPE factors and the magnitude factor; the
  // angles as ref::rope evaluates them (f32, repeated multiplication).
  void rope(ref::Rows& x, int64_t n, int64_t n_heads, const std::vector<int32_t>& pos) const {
    namespace d = tiny_family_detail;
    const int64_t hd = d::kHeadDim, half = hd / 2;
    const auto& factors = g_.t("rope_factors_short.weight");
    const double mscale = kAttnFactor;
    const float step = static_cast<float>(std::pow(10000.0, -2.0 / static_cast<double>(hd)));
    for (int64_t t = 0; t < n; ++t) {
      float theta = static_cast<float>(pos[t]);
      for (int64_t i = 0; i < half; ++i, theta *= step) {
        const double angle = static_cast<double>(theta / factors[i]);
        const double c = std::cos(angle) * mscale, s = std::sin(angle) * mscale;
        for (int64_t h = 0; h < n_heads; ++h) {
          double* v = x.data() + (t * n_heads + h) * hd;
          const double x0 = v[i], x1 = v[i + half];
          v[i] = x0 * c - x1 * s;
          v[i + half] = x0 * s + x1 * c;
        }
      }
    }
  }

  ref::Rows attention(const ref::Rows& h, int64_t n, const std::string& p, const std::vector<int32_t>& pos) const {
    namespace d = tiny_family_detail;
    const int64_t e = d::kEmbd, hd = d::kHeadDim, n_head = d::kHead;
    const int64_t n_head_kv = static_cast<int64_t>(g_.t(p + "attn_k.weight").size()) / e / hd;
    const int64_t n_q = n_head * hd, n_kv = n_head_kv * hd;
    ref::Rows q = ref::linear(h, n, g_.t(p + "attn_q.weight"), e, n_q);
    ref::Rows k = ref::linear(h, n, g_.t(p + "attn_k.weight"), e, n_kv);
    ref::Rows v = ref::linear(h, n, g_.t(p + "attn_v.weight"), e, n_kv);
    add_bias(q, p + "attn_q.bias");
    add_bias(k, p + "attn_k.bias");
    add_bias(v, p + "attn_v.bias");
    rope(q, n, n_head, pos);
    rope(k, n, n_head_kv, pos);
    const ref::Rows a =
        ref::attention(q, k, v, pos, n, n_head, n_head_kv, hd, 1.0 / std::sqrt(static_cast<double>(hd)), window);
    ref::Rows o = ref::linear(a, n, g_.t(p + "attn_output.weight"), n_q, e);
    add_bias(o, p + "attn_output.bias");
    return o;
  }

  ref::Rows experts(const ref::Rows& h, int64_t n, const std::string& p) const {
    namespace d = tiny_family_detail;
    const auto& router_w = g_.t(p + "ffn_gate_inp.weight");
    const int64_t e = d::kEmbd, n_ff = d::kFfExp, n_exp = static_cast<int64_t>(router_w.size()) / e;
    const ref::Rows router = ref::linear(h, n, router_w, e, n_exp);
    const auto& gate = g_.t(p + "ffn_gate_exps.weight");
    const auto& up = g_.t(p + "ffn_up_exps.weight");
    const auto& down = g_.t(p + "ffn_down_exps.weight");
    ref::Rows out(h.size(), 0.0);
    std::vector<int64_t> ids;
    std::vector<double> w;
    for (int64_t t = 0; t < n; ++t) {
      const std::vector<double> s(router.begin() + t * n_exp, router.begin() + (t + 1) * n_exp);
      if (softmax_top2) {
        std::vector<double> prob = s;
        ref::softmax(prob);
        ref_sparsemixer(s, d::kExpertsUsed, std::numeric_limits<double>::infinity(), ids, w);  // the top 2
        const double sum = prob[ids[0]] + prob[ids[1]];
        w = {prob[ids[0]] / sum, prob[ids[1]] / sum};
      } else {
        ref_sparsemixer(s, d::kExpertsUsed, jitter, ids, w);
      }
      const ref::Rows row(h.begin() + t * e, h.begin() + (t + 1) * e);
      for (size_t j = 0; j < ids.size(); ++j) {
        const int64_t x = ids[j];
        const ref::Rows y = ref::gated_ffn(row, 1, e, n_ff, gate.data() + x * n_ff * e, up.data() + x * n_ff * e,
                                           down.data() + x * e * n_ff, ref::silu);
        for (int64_t c = 0; c < e; ++c) out[t * e + c] += w[j] * y[c];
      }
    }
    return out;
  }

  static constexpr double kAttnFactor = static_cast<double>(1.19f);  // the file's rope.scaling.attn_factor (f32)

  const TinyGguf& g_;
  int64_t n_layer_ = 0;
};

}  // namespace ferrite::test
