// A double-precision reference forward of the tiny llama4 (tiny_llama4.h),
// written from the published definition (Hugging Face transformers'
// Llama4TextModel: Llama4TextAttention, Llama4TextL2Norm, Llama4TextMoe)
// with llama.cpp's conventions of ref_common.h (f16 cache and attention
// products, RoPE angles in f32), reading the weights back from the TinyGguf:
//   x = embed(tokens)
//   per layer il (RoPE layers: (il + 1) % 4 != 0; the others NoPE):
//     h = rms_norm(x) * attn_norm
//     q, k, v = h Wq, h Wk, h Wv
//     RoPE layers: q, k rotated (adjacent pairs); then each head of q and k
//       divided by its RMS (eps 1e-5, no weight; "L2 norm", off with 128 experts)
//     NoPE layers: q *= 1 + temp_scale * log(floor((pos + 1) / temp_floor) + 1)
//     a = Wo · softmax(q k^T / sqrt(head_dim)) v, causal; RoPE layers see
//       only keys of their own chunk: pos_k >= floor(pos_q / chunk) * chunk
//     x += a
//     h = rms_norm(x) * ffn_norm
//     dense layers ((il + 1) % moe_step != 0): f = down(silu(gate h) * up h)
//     expert layers: l = router h; the top-k of l; w = sigmoid(l);
//       f = sum_k expert_k(w_k h) + shared(h)
//     x += f
//   logits = output(rms_norm(x) * output_norm)
// Each quirk can be switched off in the reference (Quirks), for the tests
// to show that the comparison sees it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/tiny_llama4.h"

namespace ferrite::test {

struct Llama4Quirks {
  bool chunked = true;        // RoPE layers attend within their chunk
  bool nope = true;           // every fourth layer without RoPE, over the whole context
  bool temperature = true;    // NoPE layers' queries scaled by the temperature
  bool qk_norm = true;        // RoPE layers' q, k normed per head (the file's: n_expert != 128)
  bool weight_before = true;  // router weights scale the experts' inputs (else their outputs)
  bool shared_expert = true;  // the shared expert added
};

class RefLlama4 {
 public:
  RefLlama4(const Llama4Config& c, const TinyGguf& g, Llama4Quirks q = {}) : c_(c), g_(g), q_(q) {
    if (c.n_expert == 128) q_.qk_norm = false;
  }

  // Logits [n, 320] of one sequence at positions 0..n-1.
  ref::Rows logits(const std::vector<int32_t>& tokens) const {
    const int64_t n = static_cast<int64_t>(tokens.size()), e = c_.n_embd;
    std::vector<int32_t> pos(tokens.size());
    std::iota(pos.begin(), pos.end(), 0);
    ref::Rows x(static_cast<size_t>(n * e));
    const auto& emb = g_.t("token_embd.weight");
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t d = 0; d < e; ++d) x[i * e + d] = emb[tokens[i] * e + d];
    }
    for (int64_t il = 0; il < c_.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      ref::Rows h = x;
      ref::rms_norm(h, e, g_.t(p + "attn_norm.weight"), kEps);
      ref::add_inplace(x, attention(h, n, p, pos, !(q_.nope && (il + 1) % 4 == 0)));
      h = x;
      ref::rms_norm(h, e, g_.t(p + "ffn_norm.weight"), kEps);
      ref::add_inplace(x, g_.has(p + "ffn_gate_inp.weight") ? experts(h, n, p) : dense(h, n, p));
    }
    ref::rms_norm(x, e, g_.t("output_norm.weight"), kEps);
    return ref::linear(x, n, g_.t("output.weight"), e, 320);
  }

 private:
  static constexpr double kEps = 1e-5;

  static void unit_rms(ref::Rows& x, int64_t dim) {
    const std::vector<float> ones(static_cast<size_t>(dim), 1.0f);
    ref::rms_norm(x, dim, ones, kEps);
  }

  ref::Rows attention(const ref::Rows& h, int64_t n, const std::string& p, const std::vector<int32_t>& pos,
                      bool rope) const {
    const int64_t e = c_.n_embd, hd = c_.head_dim, nh = c_.n_head, nkv = c_.n_head_kv;
    const int64_t n_q = nh * hd, n_kv = nkv * hd;
    ref::Rows q = ref::linear(h, n, g_.t(p + "attn_q.weight"), e, n_q);
    ref::Rows k = ref::linear(h, n, g_.t(p + "attn_k.weight"), e, n_kv);
    const ref::Rows v = ref::linear(h, n, g_.t(p + "attn_v.weight"), e, n_kv);
    if (rope) {
      const ref::Rope r{hd, false, 10000.0, 1.0};
      ref::rope(q, n, nh, hd, pos, r);
      ref::rope(k, n, nkv, hd, pos, r);
      if (q_.qk_norm) {
        unit_rms(q, hd);
        unit_rms(k, hd);
      }
    } else if (q_.temperature) {
      for (int64_t t = 0; t < n; ++t) {
        const double f =
            std::log(std::floor((pos[t] + 1.0) / c_.temp_floor) + 1.0) * static_cast<double>(c_.temp_scale) + 1.0;
        for (int64_t i = 0; i < n_q; ++i) q[t * n_q + i] *= f;
      }
    }
    const int64_t chunk = rope && q_.chunked ? c_.chunk : 0;
    const ref::Rows a = attend(q, k, v, pos, n, 1.0 / std::sqrt(static_cast<double>(hd)), chunk);
    return ref::linear(a, n, g_.t(p + "attn_output.weight"), n_q, e);
  }

  // Causal GQA with f16 roundings (ref::attention's conventions); chunk > 0
  // hides keys before the query's chunk.
  ref::Rows attend(const ref::Rows& q, const ref::Rows& k, const ref::Rows& v, const std::vector<int32_t>& pos,
                   int64_t n, double scale, int64_t chunk) const {
    const int64_t hd = c_.head_dim, nh = c_.n_head, group = nh / c_.n_head_kv;
    const int64_t n_q = nh * hd, n_kv = c_.n_head_kv * hd;
    ref::Rows out(static_cast<size_t>(n * n_q), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t hh = 0; hh < nh; ++hh) {
        const int64_t g = hh / group;
        std::vector<double> s;
        std::vector<int64_t> js;
        for (int64_t j = 0; j < n; ++j) {
          if (pos[j] > pos[i]) continue;
          if (chunk > 0 && pos[j] < pos[i] / chunk * chunk) continue;
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d) {
            dot += ref::round_f16(q[i * n_q + hh * hd + d]) * ref::round_f16(k[j * n_kv + g * hd + d]);
          }
          s.push_back(dot * scale);
          js.push_back(j);
        }
        ref::softmax(s);
        for (size_t m = 0; m < js.size(); ++m) {
          for (int64_t d = 0; d < hd; ++d) {
            out[i * n_q + hh * hd + d] += ref::round_f16(s[m]) * ref::round_f16(v[js[m] * n_kv + g * hd + d]);
          }
        }
      }
    }
    return out;
  }

  ref::Rows dense(const ref::Rows& h, int64_t n, const std::string& p) const {
    return ref::gated_ffn(h, n, c_.n_embd, c_.n_ff, g_.t(p + "ffn_gate.weight").data(),
                          g_.t(p + "ffn_up.weight").data(), g_.t(p + "ffn_down.weight").data(), ref::silu);
  }

  ref::Rows experts(const ref::Rows& h, int64_t n, const std::string& p) const {
    const int64_t e = c_.n_embd, ff = c_.n_ff_exp, ne = c_.n_expert;
    const ref::Rows logits = ref::linear(h, n, g_.t(p + "ffn_gate_inp.weight"), e, ne);
    const float* gate = g_.t(p + "ffn_gate_exps.weight").data();
    const float* up = g_.t(p + "ffn_up_exps.weight").data();
    const float* down = g_.t(p + "ffn_down_exps.weight").data();
    ref::Rows f = q_.shared_expert ? ref::gated_ffn(h, n, e, ff, g_.t(p + "ffn_gate_shexp.weight").data(),
                                                    g_.t(p + "ffn_up_shexp.weight").data(),
                                                    g_.t(p + "ffn_down_shexp.weight").data(), ref::silu)
                                   : ref::Rows(static_cast<size_t>(n * e), 0.0);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<int64_t> order(static_cast<size_t>(ne));
      std::iota(order.begin(), order.end(), 0);
      const double* l = logits.data() + t * ne;
      std::stable_sort(order.begin(), order.end(), [l](int64_t a, int64_t b) { return l[a] > l[b]; });
      for (int64_t j = 0; j < c_.n_expert_used; ++j) {
        const int64_t x = order[static_cast<size_t>(j)];
        const double w = 1.0 / (1.0 + std::exp(-l[x]));
        ref::Rows in(h.begin() + t * e, h.begin() + (t + 1) * e);
        if (q_.weight_before) {
          for (double& v : in) v *= w;
        }
        const ref::Rows y = ref::gated_ffn(in, 1, e, ff, gate + x * ff * e, up + x * ff * e, down + x * e * ff,
                                           ref::silu);
        const double wo = q_.weight_before ? 1.0 : w;
        for (int64_t d = 0; d < e; ++d) f[t * e + d] += wo * y[d];
      }
    }
    return f;
  }

  Llama4Config c_;
  const TinyGguf& g_;
  Llama4Quirks q_;
};

}  // namespace ferrite::test
