// mamba2: a tiny random GGUF laid out as llama.cpp's converter writes
// Mamba2ForCausalLM (ssm_a stored as A = -exp(A_log), [1, n_head]; ssm_d
// [1, n_head]; ssm_conv1d [d_conv, conv_ch]; ssm_norm [d_inner / n_group,
// n_group]; head_count 0), and a double-precision reference forward written
// from the published definition (transformers' Mamba2Mixer, its sequential
// form: the SSD chunked scan computes the same recurrence):
//   per layer: h = rms_norm(x) * norm
//     z | xBC | dt = in_proj h
//     xBC = silu(causal depthwise conv1d(xBC) + conv_bias)    (kernel d_conv, zero history)
//     x | B | C = xBC; dt = softplus(dt + dt_bias)            (per head)
//     S_h = exp(dt_h A_h) S_h + dt_h x_h B_g^T; y_h = S_h C_g + D_h x_h
//       with head h in group g = h / (n_head / n_group)
//     y = rms_norm per group(y * silu(z)) * ssm_norm          (MambaRMSNormGated)
//     x += out_proj y
//   logits = output(rms_norm(x) * output_norm)   (tied to the token table)
// The mixer is shared with ref_granite_hybrid.h. Quirk switches change the
// reference only, so that a test can show each one is seen.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/tiny_gguf.h"

namespace ferrite::test {

struct SsmConfig {
  int64_t d_conv = 4, d_inner = 64, d_state = 8, n_group = 2, n_head = 8;
  // Reference-only quirks (off: the definition is broken on purpose).
  bool ref_d_skip = true, ref_gate = true, ref_grouped_norm = true, ref_group_of_head = true, ref_conv = true;
  int64_t conv_ch() const { return d_inner + 2 * n_group * d_state; }
  int64_t in_cols() const { return 2 * d_inner + 2 * n_group * d_state + n_head; }
};

namespace ref {

// The ssm keys and layer il's mixer tensors into g (llama.cpp's names).
inline void add_ssm_layer(TinyGguf& g, const SsmConfig& c, int64_t n_embd, int64_t il) {
  const std::string p = "blk." + std::to_string(il) + ".";
  g.add_linear(p + "ssm_in.weight", n_embd, c.in_cols());
  g.add(p + "ssm_conv1d.weight", {c.d_conv, c.conv_ch()}, 0.4f);
  g.add(p + "ssm_conv1d.bias", {c.conv_ch()}, 0.1f);
  g.add(p + "ssm_dt.bias", {c.n_head}, 0.5f, -0.5f);
  g.add(p + "ssm_a", {1, c.n_head}, 0.5f);
  for (float& a : g.values(p + "ssm_a")) a = -std::exp(a);  // A = -exp(A_log), as the converter stores it
  g.add(p + "ssm_d", {1, c.n_head}, 0.5f, 1.0f);
  g.add(p + "ssm_norm.weight", {c.d_inner / c.n_group, c.n_group}, 0.1f, 1.0f);
  g.add_linear(p + "ssm_out.weight", c.d_inner, n_embd);
}

inline void set_ssm_keys(TinyGguf& g, const SsmConfig& c) {
  g.set_u32("ssm.conv_kernel", static_cast<uint32_t>(c.d_conv));
  g.set_u32("ssm.inner_size", static_cast<uint32_t>(c.d_inner));
  g.set_u32("ssm.state_size", static_cast<uint32_t>(c.d_state));
  g.set_u32("ssm.time_step_rank", static_cast<uint32_t>(c.n_head));
  g.set_u32("ssm.group_count", static_cast<uint32_t>(c.n_group));
}

inline double softplus(double v) { return v > 20.0 ? v : std::log1p(std::exp(v)); }

// The mixer of layer il over h [n, n_embd] (one sequence from its start) -> [n, n_embd].
inline Rows ssm_mixer(const TinyGguf& g, const SsmConfig& c, int64_t n_embd, int64_t il, const Rows& h, int64_t n,
                      double eps) {
  const std::string p = "blk." + std::to_string(il) + ".";
  const int64_t di = c.d_inner, ds = c.d_state, ng = c.n_group, nh = c.n_head, hd = di / nh, ch = c.conv_ch();
  const int64_t cols = c.in_cols(), K = c.d_conv;
  const Rows zx = linear(h, n, g.t(p + "ssm_in.weight"), n_embd, cols);
  const auto& cw = g.t(p + "ssm_conv1d.weight");
  const auto& cb = g.t(p + "ssm_conv1d.bias");
  const auto& dtb = g.t(p + "ssm_dt.bias");
  const auto& A = g.t(p + "ssm_a");
  const auto& D = g.t(p + "ssm_d");
  const auto& nw = g.t(p + "ssm_norm.weight");
  std::vector<double> S(static_cast<size_t>(nh * hd * ds), 0.0);
  Rows y(static_cast<size_t>(n * di));
  for (int64_t t = 0; t < n; ++t) {
    std::vector<double> xbc(static_cast<size_t>(ch));
    for (int64_t cc = 0; cc < ch; ++cc) {
      double acc = cb[cc];
      for (int64_t k = 0; k < K; ++k) {
        const int64_t src = t - (K - 1) + k;  // causal: the current input meets the last tap
        if (src < 0 || (!c.ref_conv && src != t)) continue;
        acc += cw[cc * K + k] * zx[src * cols + di + cc];
      }
      xbc[cc] = silu(acc);
    }
    const double* x = xbc.data();
    const double* B = x + di;
    const double* C = B + ng * ds;
    for (int64_t hh = 0; hh < nh; ++hh) {
      const int64_t grp = c.ref_group_of_head ? hh / (nh / ng) : hh % ng;
      const double dt = softplus(zx[t * cols + di + ch + hh] + dtb[hh]);
      const double decay = std::exp(dt * A[hh]);
      for (int64_t q = 0; q < hd; ++q) {
        const double xv = x[hh * hd + q];
        double acc = 0;
        for (int64_t s = 0; s < ds; ++s) {
          double& st = S[static_cast<size_t>((hh * hd + q) * ds + s)];
          st = st * decay + dt * xv * B[grp * ds + s];
          acc += st * C[grp * ds + s];
        }
        y[t * di + hh * hd + q] = acc + (c.ref_d_skip ? D[hh] * xv : 0.0);
      }
    }
    double* yt = y.data() + t * di;
    if (c.ref_gate) {
      for (int64_t i = 0; i < di; ++i) yt[i] *= silu(zx[t * cols + i]);
    }
    const int64_t gs = c.ref_grouped_norm ? di / ng : di;
    for (int64_t g0 = 0; g0 < di; g0 += gs) {
      double ss = 0;
      for (int64_t i = 0; i < gs; ++i) ss += yt[g0 + i] * yt[g0 + i];
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(gs) + eps);
      for (int64_t i = 0; i < gs; ++i) yt[g0 + i] = yt[g0 + i] * inv * nw[g0 + i];
    }
  }
  return linear(y, n, g.t(p + "ssm_out.weight"), di, n_embd);
}

}  // namespace ref

struct Mamba2Config {
  int64_t n_vocab = 40, n_embd = 32, n_layer = 2;
  SsmConfig ssm;
  double eps = 1e-5;
  bool tied_output = true;
};

class TinyMamba2 {
 public:
  explicit TinyMamba2(const Mamba2Config& c, uint32_t seed = 29) : c_(c), g_("mamba2", seed) {
    g_.set_u32("context_length", 1u << 20);
    g_.set_u32("embedding_length", static_cast<uint32_t>(c.n_embd));
    g_.set_u32("block_count", static_cast<uint32_t>(c.n_layer));
    g_.set_u32("feed_forward_length", 0);
    g_.set_u32("attention.head_count", 0);
    g_.set_f32("attention.layer_norm_rms_epsilon", static_cast<float>(c.eps));
    ref::set_ssm_keys(g_, c.ssm);
    g_.add("token_embd.weight", {c.n_embd, c.n_vocab}, 0.5f);
    for (int64_t il = 0; il < c.n_layer; ++il) {
      g_.add_norm("blk." + std::to_string(il) + ".attn_norm.weight", c.n_embd);
      ref::add_ssm_layer(g_, c.ssm, c.n_embd, il);
    }
    g_.add_norm("output_norm.weight", c.n_embd);
    if (!c.tied_output) g_.add_linear("output.weight", c.n_embd, c.n_vocab);
    g_.write();
  }

  const std::filesystem::path& path() const { return g_.path(); }
  Mamba2Config& config() { return c_; }

  // Logits [n, n_vocab] of one sequence from its start.
  ref::Rows reference(const std::vector<int32_t>& tokens) const {
    const auto n = static_cast<int64_t>(tokens.size());
    const int64_t ne = c_.n_embd;
    ref::Rows x(static_cast<size_t>(n * ne));
    const auto& emb = g_.t("token_embd.weight");
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t d = 0; d < ne; ++d) x[i * ne + d] = emb[tokens[i] * ne + d];
    }
    for (int64_t il = 0; il < c_.n_layer; ++il) {
      ref::Rows h = x;
      ref::rms_norm(h, ne, g_.t("blk." + std::to_string(il) + ".attn_norm.weight"), c_.eps);
      ref::add_inplace(x, ref::ssm_mixer(g_, c_.ssm, ne, il, h, n, c_.eps));
    }
    ref::rms_norm(x, ne, g_.t("output_norm.weight"), c_.eps);
    return ref::linear(x, n, g_.t(c_.tied_output ? "token_embd.weight" : "output.weight"), ne, c_.n_vocab);
  }

 private:
  Mamba2Config c_;
  TinyGguf g_;
};

}  // namespace ferrite::test
