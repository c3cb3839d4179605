// A double-precision forward of deepseek2 in its published, expanded form
// (DeepSeek-V2 paper / modeling_deepseek: full keys [W_UK c, k_pe] and
// values W_UV c per head, no absorption, no f16 rounding anywhere), written
// independently of src/, on tiny_deepseek.h's models. It measures how far
// llama.cpp (full f16 K/V cache) and ferrite (absorbed form, f16 latent
// cache) each sit from exact arithmetic (deepseek_test.cpp).
// YaRN as llama.cpp applies it (c392e50, facts): angles theta_interp =
// theta / factor and theta_extrap = theta mixed by YaRN's ramp between the
// correction dimensions (beta_fast 32, beta_slow 1), rotation magnitude 1 (the
// rotation's mscale cancels), scores scaled by mscale^2 / sqrt(nope + rope),
// mscale = 1 + yarn_log_multiplier ln(factor). Adjacent-pair rotation.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/tiny_deepseek.h"

namespace ferrite::test::ref {

// cos/sin angle of pair i at position p.
inline double deepseek2_angle(const DeepseekShape& s, int64_t i, int32_t p) {
  const double base = 10000.0, n_rot = static_cast<double>(s.qk_rope);
  const double theta = p * std::pow(base, -2.0 * static_cast<double>(i) / n_rot);
  if (s.yarn_factor <= 0.0f) return theta;
  auto corr = [&](double beta) {
    return n_rot * std::log(s.yarn_orig_ctx / (beta * 2.0 * M_PI)) / (2.0 * std::log(base));
  };
  const double low = std::max(0.0, std::floor(corr(32.0))), high = std::min(n_rot - 1, std::ceil(corr(1.0)));
  const double y = (static_cast<double>(i) - low) / std::max(0.001, high - low);
  const double mix = 1.0 - std::min(1.0, std::max(0.0, y));  // 1: extrapolate
  return theta / s.yarn_factor * (1.0 - mix) + theta * mix;
}

inline void deepseek2_rope(double* v, const DeepseekShape& s, int32_t p) {
  for (int64_t i = 0; i < s.qk_rope / 2; ++i) {
    const double a = deepseek2_angle(s, i, p), c = std::cos(a), sn = std::sin(a);
    const double x0 = v[2 * i], x1 = v[2 * i + 1];
    v[2 * i] = x0 * c - x1 * sn;
    v[2 * i + 1] = x0 * sn + x1 * c;
  }
}

// Logits [n, n_vocab] of tokens at positions 0..n-1.
inline Rows deepseek2_reference(const TinyGguf& m, const DeepseekShape& s, const std::vector<int32_t>& tokens) {
  const int64_t n = static_cast<int64_t>(tokens.size()), d = s.n_embd, H = s.n_head;
  const int64_t nope = s.qk_nope, rp = s.qk_rope, qk = nope + rp, lat = s.kv_lora_rank, vd = s.v_head;
  const double eps = 1e-6;
  const double mscale = s.yarn_factor > 0.0f ? 1.0 + s.yarn_log_mul * std::log(s.yarn_factor) : 1.0;
  const double scale = mscale * mscale / std::sqrt(static_cast<double>(qk));
  Rows x(static_cast<size_t>(n * d));
  const std::vector<float>& embd = m.t("token_embd.weight");
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t c = 0; c < d; ++c) x[t * d + c] = embd[tokens[t] * d + c];
  }
  for (int64_t il = 0; il < s.n_layer; ++il) {
    auto w = [&](const char* name) -> const std::vector<float>& { return m.t("blk." + std::to_string(il) + "." + name); };
    Rows h = x;
    rms_norm(h, d, w("attn_norm.weight"), eps);
    Rows q;
    if (s.q_lora_rank > 0) {
      Rows qa = linear(h, n, w("attn_q_a.weight"), d, s.q_lora_rank);
      rms_norm(qa, s.q_lora_rank, w("attn_q_a_norm.weight"), eps);
      q = linear(qa, n, w("attn_q_b.weight"), s.q_lora_rank, H * qk);
    } else {
      q = linear(h, n, w("attn_q.weight"), d, H * qk);
    }
    Rows kv = linear(h, n, w("attn_kv_a_mqa.weight"), d, lat + rp);
    Rows c(static_cast<size_t>(n * lat));
    for (int64_t t = 0; t < n; ++t) std::copy_n(kv.begin() + t * (lat + rp), lat, c.begin() + t * lat);
    rms_norm(c, lat, w("attn_kv_a_norm.weight"), eps);
    const Rows kvb = linear(c, n, w("attn_kv_b.weight"), lat, H * (nope + vd));
    Rows att(static_cast<size_t>(n * H * vd), 0.0);
    for (int64_t t = 0; t < n; ++t) {
      deepseek2_rope(kv.data() + t * (lat + rp) + lat, s, static_cast<int32_t>(t));  // k_pe
      for (int64_t hh = 0; hh < H; ++hh) deepseek2_rope(q.data() + (t * H + hh) * qk + nope, s, static_cast<int32_t>(t));
    }
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t hh = 0; hh < H; ++hh) {
        const double* qh = q.data() + (t * H + hh) * qk;
        std::vector<double> p;
        for (int64_t u = 0; u <= t; ++u) {
          const double* kn = kvb.data() + (u * H + hh) * (nope + vd);
          const double* kp = kv.data() + u * (lat + rp) + lat;
          double dot = 0;
          for (int64_t i = 0; i < nope; ++i) dot += qh[i] * kn[i];
          for (int64_t i = 0; i < rp; ++i) dot += qh[nope + i] * kp[i];
          p.push_back(dot * scale);
        }
        softmax(p);
        for (int64_t u = 0; u <= t; ++u) {
          const double* vv = kvb.data() + (u * H + hh) * (nope + vd) + nope;
          for (int64_t j = 0; j < vd; ++j) att[(t * H + hh) * vd + j] += p[static_cast<size_t>(u)] * vv[j];
        }
      }
    }
    add_inplace(x, linear(att, n, w("attn_output.weight"), H * vd, d));

    h = x;
    rms_norm(h, d, w("ffn_norm.weight"), eps);
    if (il < s.n_dense) {
      add_inplace(x, gated_ffn(h, n, d, s.n_ff, w("ffn_gate.weight").data(), w("ffn_up.weight").data(),
                               w("ffn_down.weight").data(), silu));
      continue;
    }
    const Rows logits = linear(h, n, w("ffn_gate_inp.weight"), d, s.n_expert);
    const int64_t ff = s.n_ff_exp;
    for (int64_t t = 0; t < n; ++t) {
      std::vector<double> p(logits.begin() + t * s.n_expert, logits.begin() + (t + 1) * s.n_expert);
      if (s.gating == 2) {
        for (double& v : p) v = 1.0 / (1.0 + std::exp(-v));
      } else {
        softmax(p);
      }
      std::vector<double> key = p;
      if (s.probs_bias) {
        for (int64_t e = 0; e < s.n_expert; ++e) key[e] += w("exp_probs_b.bias")[e];
      }
      std::vector<int64_t> order(static_cast<size_t>(s.n_expert));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return key[a] > key[b]; });
      double sum = 0;
      for (int64_t j = 0; j < s.n_expert_used; ++j) sum += p[order[j]];
      const Rows ht(h.begin() + t * d, h.begin() + (t + 1) * d);
      for (int64_t j = 0; j < s.n_expert_used; ++j) {
        const int64_t e = order[j];
        double wt = p[e];
        if (s.weights_norm) wt /= sum;
        wt *= s.weights_scale;
        const Rows y = gated_ffn(ht, 1, d, ff, w("ffn_gate_exps.weight").data() + e * ff * d,
                                 w("ffn_up_exps.weight").data() + e * ff * d,
                                 w("ffn_down_exps.weight").data() + e * d * ff, silu);
        for (int64_t c2 = 0; c2 < d; ++c2) x[t * d + c2] += wt * y[c2];
      }
    }
    add_inplace(x, gated_ffn(h, n, d, ff * s.n_shared, w("ffn_gate_shexp.weight").data(),
                             w("ffn_up_shexp.weight").data(), w("ffn_down_shexp.weight").data(), silu));
  }
  rms_norm(x, d, m.t("output_norm.weight"), eps);
  return linear(x, n, m.t("output.weight"), d, s.n_vocab);
}

}  // namespace ferrite::test::ref
