// Plain double-precision building blocks of the reference forwards
// (ref_qwen3.h, ref_gemma.h), written from the published definitions of the
// transformer pieces and independent of src/. Activations are row-major:
// x [n_tokens, dim] in a std::vector<double>.
//
// Some conventions are llama.cpp's rather than the Python definitions', as
// the goldens' are (llama.cpp is the engine we must agree with):
//   - keys and values are stored in an f16 cache, so they are rounded to
//     f16 before attention reads them; its CPU attention also multiplies
//     in f16, so queries and the normalised attention probabilities are
//     rounded to f16 too;
//   - GELU is the tanh approximation tabulated over f16 inputs (input
//     rounded to f16, result rounded to f16);
//   - RoPE angles pos * base^(-2i/n_rot) are evaluated in f32 by repeated
//     multiplication (theta_{i+1} = theta_i * base^(-2/n_rot)); with
//     head_dim 32 and sharp attention the exact angles move logits of ~30 by
//     ~1e-3, which would otherwise hide real errors of that size.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/fp16.h"

namespace ferrite::test::ref {

using Rows = std::vector<double>;

inline double round_f16(double v) { return fp16_to_fp32(fp32_to_fp16(static_cast<float>(v))); }

// y [n, n_out] = x [n, n_in] W^T, W stored as n_out rows of n_in (GGUF ne {n_in, n_out}).
inline Rows linear(const Rows& x, int64_t n, const float* w, int64_t n_in, int64_t n_out) {
  Rows y(static_cast<size_t>(n * n_out));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o = 0; o < n_out; ++o) {
      double acc = 0;
      for (int64_t c = 0; c < n_in; ++c) acc += x[i * n_in + c] * w[o * n_in + c];
      y[i * n_out + o] = acc;
    }
  }
  return y;
}
inline Rows linear(const Rows& x, int64_t n, const std::vector<float>& w, int64_t n_in, int64_t n_out) {
  return linear(x, n, w.data(), n_in, n_out);
}

// RMSNorm of every row of `dim` values: x / sqrt(mean(x^2) + eps) * w.
inline void rms_norm(Rows& x, int64_t dim, const std::vector<float>& w, double eps) {
  const int64_t rows = static_cast<int64_t>(x.size()) / dim;
  for (int64_t r = 0; r < rows; ++r) {
    double* v = x.data() + r * dim;
    double ss = 0;
    for (int64_t d = 0; d < dim; ++d) ss += v[d] * v[d];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
    for (int64_t d = 0; d < dim; ++d) v[d] = v[d] * inv * w[d];
  }
}

inline void softmax(std::vector<double>& v) {
  const double max = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double& e : v) sum += (e = std::exp(e - max));
  for (double& e : v) e /= sum;
}

struct Rope {
  int64_t n_rot = 0;       // rotated dimensions of each head (the first n_rot)
  bool neox = false;       // NeoX pairs (i, i + n_rot/2); otherwise (2i, 2i+1)
  double base = 10000.0;   // theta_i = base^(-2i / n_rot)
  double pos_scale = 1.0;  // linear scaling: the position is multiplied by 1/factor
  // Angles as transformers computes them instead (f32 pos * f32(1 / base^(2i/n_rot))).
  bool hf_angles = false;
};

// Rotates every head of x [n, n_heads * head_dim] by its token's position.
inline void rope(Rows& x, int64_t n, int64_t n_heads, int64_t head_dim, const std::vector<int32_t>& pos,
                 const Rope& r) {
  const int64_t half = r.n_rot / 2;
  const float step = static_cast<float>(std::pow(r.base, -2.0 / static_cast<double>(r.n_rot)));
  for (int64_t t = 0; t < n; ++t) {
    std::vector<double> angle(static_cast<size_t>(half));
    float theta = static_cast<float>(pos[t]);  // pos * step^i, in f32
    for (int64_t i = 0; i < half; ++i, theta *= step) {
      angle[i] = static_cast<double>(static_cast<float>(r.pos_scale) * theta);
      if (r.hf_angles) {
        const float inv = 1.0f / std::pow(static_cast<float>(r.base),
                                          static_cast<float>(2 * i) / static_cast<float>(r.n_rot));
        angle[i] = static_cast<double>(static_cast<float>(pos[t]) * inv);
      }
    }
    for (int64_t h = 0; h < n_heads; ++h) {
      double* v = x.data() + (t * n_heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const double c = std::cos(angle[i]), s = std::sin(angle[i]);
        const int64_t a = r.neox ? i : 2 * i;
        const int64_t b = r.neox ? i + half : 2 * i + 1;
        const double x0 = v[a], x1 = v[b];
        v[a] = x0 * c - x1 * s;
        v[b] = x0 * s + x1 * c;
      }
    }
  }
}

// Causal grouped-query attention of one sequence at positions pos[0..n):
// q [n, n_head * hd], k and v [n, n_head_kv * hd] -> [n, n_head * hd].
// Query head h reads key/value head h / (n_head / n_head_kv). window > 0
// hides keys with pos_q - pos_k >= window (a sliding window). Queries, keys,
// values and probabilities are rounded to f16 (llama.cpp's f16 cache and
// products) unless `f16` is false.
inline Rows attention(const Rows& q, const Rows& k, const Rows& v, const std::vector<int32_t>& pos, int64_t n,
                      int64_t n_head, int64_t n_head_kv, int64_t hd, double scale, int64_t window,
                      bool f16 = true) {
  const auto r16 = [f16](double x) { return f16 ? round_f16(x) : x; };
  const int64_t group = n_head / n_head_kv, n_q = n_head * hd, n_kv = n_head_kv * hd;
  Rows out(static_cast<size_t>(n * n_q), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t g = h / group;
      std::vector<double> p;
      std::vector<int64_t> js;
      for (int64_t j = 0; j < n; ++j) {
        if (pos[j] > pos[i]) continue;
        if (window > 0 && pos[i] - pos[j] >= window) continue;
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d) {
          dot += r16(q[i * n_q + h * hd + d]) * r16(k[j * n_kv + g * hd + d]);
        }
        p.push_back(dot * scale);
        js.push_back(j);
      }
      softmax(p);
      for (size_t m = 0; m < js.size(); ++m) {
        for (int64_t d = 0; d < hd; ++d) {
          out[i * n_q + h * hd + d] += r16(p[m]) * r16(v[js[m] * n_kv + g * hd + d]);
        }
      }
    }
  }
  return out;
}

inline double silu(double x) { return x / (1.0 + std::exp(-x)); }

// GELU, tanh approximation, as llama.cpp tabulates it over f16 inputs.
inline double gelu_f16(double v) {
  constexpr double kSaturate = 10.0;  // llama.cpp: 0 below -10, identity above 10
  if (v <= -kSaturate) return 0.0;
  if (v >= kSaturate) return v;
  const double x = round_f16(v);
  const double g = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * x * (1.0 + 0.044715 * x * x)));
  return round_f16(g);
}

// Gated feed-forward of x [n, n_embd]: down(act(gate x) * up x) -> [n, n_embd].
template <class Act>
Rows gated_ffn(const Rows& x, int64_t n, int64_t n_embd, int64_t n_ff, const float* gate, const float* up,
               const float* down, Act act) {
  Rows g = linear(x, n, gate, n_embd, n_ff);
  const Rows u = linear(x, n, up, n_embd, n_ff);
  for (size_t i = 0; i < g.size(); ++i) g[i] = act(g[i]) * u[i];
  return linear(g, n, down, n_ff, n_embd);
}

inline void add_inplace(Rows& x, const Rows& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

}  // namespace ferrite::test::ref
