// Double-precision reference forwards of rwkv6 and rwkv7 written from the
// published definitions (RWKV-6 "Finch" and RWKV-7 "Goose": token shift,
// lerp mixes, LoRA decays, the wkv recurrences, per-head group norm, the
// squared-ReLU channel mix), reading the weights of a TinyGguf
// (tiny_rwkv.h) by llama.cpp's names, one sequence from a zero state,
// independent of src/. The constants are llama.cpp's (group-norm epsilon
// 64e-5, rwkv7's decay scale e^-0.5, kk's L2 epsilon 1e-12). `drop` removes
// one part of the definition, for tests to show that each matters.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/tiny_gguf.h"
#include "model/tiny_rwkv.h"

namespace ferrite::test::ref {

enum class RwkvDrop { None, TokenShift, Bonus, GroupNorm, ValueResidual, Gate, Delta };

namespace rwkv_detail {

using Vec = std::vector<double>;

inline Vec layer_norm(const Vec& x, const float* w, const float* b, double eps) {
  const auto n = static_cast<int64_t>(x.size());
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(n);
  for (double v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(n);
  Vec y(x.size());
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  return y;
}

// y = W x with W [n_out rows of n_in] at w.
inline Vec mv(const float* w, const Vec& x, int64_t n_out) {
  const auto n_in = static_cast<int64_t>(x.size());
  Vec y(static_cast<size_t>(n_out), 0.0);
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t i = 0; i < n_in; ++i) y[o] += w[o * n_in + i] * x[i];
  }
  return y;
}

inline double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// A sequence's per-layer state: shift rows and wkv matrices.
struct LayerState {
  Vec att, ffn, S;
};

}  // namespace rwkv_detail

class RefRwkv {
 public:
  RefRwkv(const TinyGguf& g, const RwkvConfig& c) : g_(g), c_(c) {}

  // Logits [n, n_vocab] of every token.
  Rows forward(const std::vector<int32_t>& tokens, RwkvDrop drop = RwkvDrop::None) const {
    using namespace rwkv_detail;
    const int64_t e = c_.n_embd, nv = tiny_family_detail::kVocab, hs = c_.head_size;
    std::vector<LayerState> st(static_cast<size_t>(c_.n_layer));
    for (auto& s : st) {
      s.att.assign(static_cast<size_t>(e), 0.0);
      s.ffn.assign(static_cast<size_t>(e), 0.0);
      s.S.assign(static_cast<size_t>(e * hs), 0.0);
    }
    Rows out;
    for (int32_t tok : tokens) {
      Vec x(g_.t("token_embd.weight").begin() + tok * e, g_.t("token_embd.weight").begin() + (tok + 1) * e);
      x = layer_norm(x, f("token_embd_norm.weight"), f("token_embd_norm.bias"), kEps);
      Vec v_first;
      for (int64_t il = 0; il < c_.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerState& s = st[static_cast<size_t>(il)];
        Vec h = layer_norm(x, f(p + "attn_norm.weight"), f(p + "attn_norm.bias"), kEps);
        const Vec prev = drop == RwkvDrop::TokenShift ? Vec(h.size(), 0.0) : s.att;
        s.att = h;
        const Vec y = c_.version == 7 ? time_mix7(p, il, h, prev, s.S, v_first, drop) : time_mix6(p, h, prev, s.S, drop);
        for (int64_t i = 0; i < e; ++i) x[i] += y[i];
        h = layer_norm(x, f(p + "attn_norm_2.weight"), f(p + "attn_norm_2.bias"), kEps);
        const Vec prev2 = drop == RwkvDrop::TokenShift ? Vec(h.size(), 0.0) : s.ffn;
        s.ffn = h;
        const Vec z = channel_mix(p, h, prev2);
        for (int64_t i = 0; i < e; ++i) x[i] += z[i];
        if (c_.version == 6 && c_.rescale_every > 0 && (il + 1) % c_.rescale_every == 0) {
          for (double& v : x) v *= 0.5;
        }
      }
      x = layer_norm(x, f("output_norm.weight"), f("output_norm.bias"), kEps);
      const Vec l = mv(f("output.weight"), x, nv);
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  }

 private:
  static constexpr double kEps = 1e-5, kGnEps = 64e-5;
  const float* f(const std::string& name) const { return g_.t(name).data(); }

  // lerp: h + (prev - h) * mu, mu[i] = base[i] (+ add[i]).
  static rwkv_detail::Vec lerp(const rwkv_detail::Vec& h, const rwkv_detail::Vec& prev, const float* base,
                               const rwkv_detail::Vec* add = nullptr) {
    rwkv_detail::Vec y(h.size());
    for (size_t i = 0; i < h.size(); ++i) y[i] = h[i] + (prev[i] - h[i]) * (base[i] + (add ? (*add)[i] : 0.0));
    return y;
  }

  // Per head: LayerNorm without weight, then * ln + ln_b over the whole row.
  rwkv_detail::Vec group_norm(const std::string& p, const rwkv_detail::Vec& y, RwkvDrop drop) const {
    const int64_t e = c_.n_embd, hs = c_.head_size;
    rwkv_detail::Vec o(y.size());
    const float *w = f(p + "time_mix_ln.weight"), *b = f(p + "time_mix_ln.bias");
    for (int64_t h0 = 0; h0 < e; h0 += hs) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < hs; ++i) mean += y[h0 + i];
      mean /= static_cast<double>(hs);
      for (int64_t i = 0; i < hs; ++i) var += (y[h0 + i] - mean) * (y[h0 + i] - mean);
      var /= static_cast<double>(hs);
      for (int64_t i = 0; i < hs; ++i) {
        const double nrm = drop == RwkvDrop::GroupNorm ? y[h0 + i] : (y[h0 + i] - mean) / std::sqrt(var + kGnEps);
        o[h0 + i] = nrm * w[h0 + i] + b[h0 + i];
      }
    }
    return o;
  }

  rwkv_detail::Vec time_mix6(const std::string& p, const rwkv_detail::Vec& h, const rwkv_detail::Vec& prev,
                             rwkv_detail::Vec& S, RwkvDrop drop) const {
    using namespace rwkv_detail;
    const int64_t e = c_.n_embd, hs = c_.head_size, ex = c_.mix_extra;
    // The data-dependent mixes: a LoRA of h + (prev - h) lerp_x, group j for w, k, v, r, g.
    const Vec xx = lerp(h, prev, f(p + "time_mix_lerp_x.weight"));
    Vec t = mv(f(p + "time_mix_w1.weight"), xx, 5 * ex);
    for (double& v : t) v = std::tanh(v);
    Vec mixed[5];
    for (int j = 0; j < 5; ++j) {
      const Vec tj(t.begin() + j * ex, t.begin() + (j + 1) * ex);
      const Vec m = mv(f(p + "time_mix_w2.weight") + j * e * ex, tj, e);
      mixed[j] = lerp(h, prev, f(p + "time_mix_lerp_fused.weight") + j * e, &m);
    }
    const Vec k = mv(f(p + "time_mix_key.weight"), mixed[1], e);
    const Vec v = mv(f(p + "time_mix_value.weight"), mixed[2], e);
    const Vec r = mv(f(p + "time_mix_receptance.weight"), mixed[3], e);
    Vec g = mv(f(p + "time_mix_gate.weight"), mixed[4], e);
    for (double& x : g) x = x * sigmoid(x);
    Vec dt = mv(f(p + "time_mix_decay_w1.weight"), mixed[0], c_.decay_extra);
    for (double& x : dt) x = std::tanh(x);
    Vec w = mv(f(p + "time_mix_decay_w2.weight"), dt, e);
    const float *d0 = f(p + "time_mix_decay.weight"), *u = f(p + "time_mix_first.weight");
    for (int64_t i = 0; i < e; ++i) w[i] = std::exp(-std::exp(w[i] + d0[i]));
    // wkv6 per head with S[key i][value j].
    Vec y(static_cast<size_t>(e), 0.0);
    for (int64_t h0 = 0; h0 < e; h0 += hs) {
      double* Sh = S.data() + h0 * hs;
      for (int64_t i = 0; i < hs; ++i) {
        const double bonus = drop == RwkvDrop::Bonus ? 0.0 : u[h0 + i];
        for (int64_t j = 0; j < hs; ++j) {
          const double kv = k[h0 + i] * v[h0 + j];
          y[h0 + j] += r[h0 + i] * (Sh[i * hs + j] + bonus * kv);
          Sh[i * hs + j] = w[h0 + i] * Sh[i * hs + j] + kv;
        }
      }
    }
    Vec o = group_norm(p, y, drop);
    for (int64_t i = 0; i < e; ++i) o[i] *= g[i];
    return mv(f(p + "time_mix_output.weight"), o, e);
  }

  rwkv_detail::Vec time_mix7(const std::string& p, int64_t il, const rwkv_detail::Vec& h,
                             const rwkv_detail::Vec& prev, rwkv_detail::Vec& S, rwkv_detail::Vec& v_first,
                             RwkvDrop drop) const {
    using namespace rwkv_detail;
    const int64_t e = c_.n_embd, hs = c_.head_size;
    const float* mu = f(p + "time_mix_lerp_fused.weight");
    auto x_of = [&](int j) { return lerp(h, prev, mu + j * e); };  // r, w, k, v, a, g
    auto lora = [&](const char* a, const char* b, int64_t rank, const Vec& x, int act) {
      Vec t = mv(f(p + a), x, rank);
      for (double& z : t) z = act == 1 ? std::tanh(z) : act == 2 ? sigmoid(z) : z;
      return mv(f(p + b), t, e);
    };
    const Vec r = mv(f(p + "time_mix_receptance.weight"), x_of(0), e);
    Vec w = lora("time_mix_w1.weight", "time_mix_w2.weight", c_.decay_rank, x_of(1), 1);
    Vec k = mv(f(p + "time_mix_key.weight"), x_of(2), e);
    const Vec xv = x_of(3);
    Vec v = mv(f(p + "time_mix_value.weight"), xv, e);
    if (il == 0) {
      v_first = v;
    } else if (drop != RwkvDrop::ValueResidual) {
      const Vec m = lora("time_mix_v1.weight", "time_mix_v2.weight", c_.value_rank, xv, 0);
      const float* v0 = f(p + "time_mix_v0.weight");
      for (int64_t i = 0; i < e; ++i) v[i] += (v_first[i] - v[i]) * sigmoid(m[i] + v0[i]);
    }
    Vec a = lora("time_mix_a1.weight", "time_mix_a2.weight", c_.iclr_rank, x_of(4), 0);
    const float *w0 = f(p + "time_mix_w0.weight"), *a0 = f(p + "time_mix_a0.weight");
    const float *k_k = f(p + "time_mix_k_k.weight"), *k_a = f(p + "time_mix_k_a.weight");
    Vec kk(static_cast<size_t>(e));
    for (int64_t i = 0; i < e; ++i) {
      w[i] = std::exp(-std::exp(-0.5) * sigmoid(w[i] + w0[i]));
      a[i] = sigmoid(a[i] + a0[i]);
      kk[i] = k[i] * k_k[i];
      k[i] = k[i] * (1.0 + (a[i] - 1.0) * k_a[i]);
    }
    Vec y(static_cast<size_t>(e), 0.0);
    for (int64_t h0 = 0; h0 < e; h0 += hs) {
      double nrm = 0;
      for (int64_t j = 0; j < hs; ++j) nrm += kk[h0 + j] * kk[h0 + j];
      nrm = std::max(std::sqrt(nrm), 1e-12);
      double* Sh = S.data() + h0 * hs;
      // S = S diag(w) - (S kk) (kk a)^T + v k^T; y = S r   (S[value i][key j])
      for (int64_t i = 0; i < hs; ++i) {
        double sk = 0;
        for (int64_t j = 0; j < hs; ++j) sk += Sh[i * hs + j] * kk[h0 + j] / nrm;
        if (drop == RwkvDrop::Delta) sk = 0;
        double acc = 0;
        for (int64_t j = 0; j < hs; ++j) {
          const double kn = kk[h0 + j] / nrm;
          Sh[i * hs + j] = Sh[i * hs + j] * w[h0 + j] - sk * kn * a[h0 + j] + v[h0 + i] * k[h0 + j];
          acc += Sh[i * hs + j] * r[h0 + j];
        }
        y[h0 + i] = acc;
      }
    }
    Vec o = group_norm(p, y, drop);
    if (drop != RwkvDrop::Bonus) {
      const float* r_k = f(p + "time_mix_r_k.weight");
      for (int64_t h0 = 0; h0 < e; h0 += hs) {
        double s = 0;
        for (int64_t i = 0; i < hs; ++i) s += r[h0 + i] * k[h0 + i] * r_k[h0 + i];
        for (int64_t i = 0; i < hs; ++i) o[h0 + i] += s * v[h0 + i];
      }
    }
    if (c_.gate_rank > 0 && drop != RwkvDrop::Gate) {
      const Vec g = lora("time_mix_g1.weight", "time_mix_g2.weight", c_.gate_rank, x_of(5), 2);
      for (int64_t i = 0; i < e; ++i) o[i] *= g[i];
    }
    return mv(f(p + "time_mix_output.weight"), o, e);
  }

  rwkv_detail::Vec channel_mix(const std::string& p, const rwkv_detail::Vec& h, const rwkv_detail::Vec& prev) const {
    using namespace rwkv_detail;
    const int64_t e = c_.n_embd;
    Vec k = mv(f(p + "channel_mix_key.weight"), lerp(h, prev, f(p + "channel_mix_lerp_k.weight")), c_.n_ff);
    for (double& z : k) z = z > 0 ? z * z : 0.0;
    Vec y = mv(f(p + "channel_mix_value.weight"), k, e);
    if (c_.version == 6) {
      const Vec r = mv(f(p + "channel_mix_receptance.weight"), lerp(h, prev, f(p + "channel_mix_lerp_r.weight")), e);
      for (int64_t i = 0; i < e; ++i) y[i] *= sigmoid(r[i]);
    }
    return y;
  }

  const TinyGguf& g_;
  RwkvConfig c_;
};

}  // namespace ferrite::test::ref
