// A tiny random minicpm3 model in llama.cpp c392e50's layout (its converter's
// keys: q_lora_rank, kv_lora_rank, key_length, rope.dimension_count, no
// value_length; tensors attn_q_a/attn_q_a_norm/attn_q_b, attn_kv_a_mqa,
// attn_kv_a_norm, attn_kv_b, attn_output, a SwiGLU FFN, and LongRoPE's
// rope_factors_short/long of rope / 2 values), and a double-precision
// forward written from MiniCPM3's published definition (OpenBMB's
// modeling_minicpm: the expanded form, full keys [W_UK c, k_pe] and values
// W_UV c per head; NeoX-paired rotation of q_pe and k_pe with the short
// factors dividing the angles; embeddings x 12, both residual branches x
// 1.4 / sqrt(n_layer), the normalised output x 256 / n_embd), with no f16
// rounding anywhere (tests/model/minicpm3_test.cpp, tests/cuda).
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/tiny_families.h"

namespace ferrite::test {

struct MiniCpm3Shape {
  int64_t n_layer = 3, n_embd = 64, n_head = 4, q_lora = 48, kv_lora = 32, nope = 16, rope = 16, n_ff = 96;
  uint32_t seed = 33001;
};

// factors = false: the short factors all 1 (the same other weights).
inline std::unique_ptr<TinyGguf> make_tiny_minicpm3(const MiniCpm3Shape& s = {}, bool factors = true) {
  namespace d = tiny_family_detail;
  auto g = std::make_unique<TinyGguf>("minicpm3", s.seed);
  d::add_vocab(*g);
  const int64_t e = s.n_embd, H = s.n_head, qk = s.nope + s.rope, vd = e / H;
  g->set_u32("context_length", d::kCtx);
  g->set_u32("embedding_length", static_cast<uint32_t>(e));
  g->set_u32("block_count", static_cast<uint32_t>(s.n_layer));
  g->set_u32("feed_forward_length", static_cast<uint32_t>(s.n_ff));
  g->set_u32("attention.head_count", static_cast<uint32_t>(H));
  g->set_u32("attention.head_count_kv", static_cast<uint32_t>(H));
  g->set_f32("attention.layer_norm_rms_epsilon", 1e-5f);
  g->set_u32("attention.q_lora_rank", static_cast<uint32_t>(s.q_lora));
  g->set_u32("attention.kv_lora_rank", static_cast<uint32_t>(s.kv_lora));
  g->set_u32("attention.key_length", static_cast<uint32_t>(qk));
  g->set_u32("rope.dimension_count", static_cast<uint32_t>(s.rope));
  g->set_f32("rope.freq_base", 10000.0f);
  g->add("token_embd.weight", {e, d::kVocab}, 0.125f);
  g->add_norm("output_norm.weight", e);
  // Logits of order 1 after the head's x 256 / n_embd.
  g->add("output.weight", {e, d::kVocab}, 0.25f / std::sqrt(static_cast<float>(e)));
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    g->add_norm(p + "attn_norm.weight", e);
    g->add_linear(p + "attn_q_a.weight", e, s.q_lora);
    g->add_norm(p + "attn_q_a_norm.weight", s.q_lora);
    g->add_linear(p + "attn_q_b.weight", s.q_lora, H * qk);
    g->add_linear(p + "attn_kv_a_mqa.weight", e, s.kv_lora + s.rope);
    g->add_norm(p + "attn_kv_a_norm.weight", s.kv_lora);
    g->add_linear(p + "attn_kv_b.weight", s.kv_lora, H * (s.nope + vd));
    g->add_linear(p + "attn_output.weight", H * vd, e);
    g->add_norm(p + "ffn_norm.weight", e);
    g->add_linear(p + "ffn_gate.weight", e, s.n_ff);
    g->add_linear(p + "ffn_up.weight", e, s.n_ff);
    g->add_linear(p + "ffn_down.weight", s.n_ff, e);
  }
  g->add("rope_factors_short.weight", {s.rope / 2}, 0.3f, 1.5f);
  g->add("rope_factors_long.weight", {s.rope / 2}, 1.0f, 6.0f);
  if (!factors) {
    auto& f = g->values("rope_factors_short.weight");
    std::fill(f.begin(), f.end(), 1.0f);
  }
  g->write();
  return g;
}

namespace ref {

// Logits [n, n_vocab] of tokens at positions 0..n-1 (the short factors:
// contexts up to context_length).
inline Rows minicpm3_reference(const TinyGguf& m, const MiniCpm3Shape& s, const std::vector<int32_t>& tokens) {
  namespace d = tiny_family_detail;
  const int64_t n = static_cast<int64_t>(tokens.size()), e = s.n_embd, H = s.n_head;
  const int64_t nope = s.nope, rp = s.rope, qk = nope + rp, lat = s.kv_lora, vd = e / H;
  const double eps = 1e-5, res = 1.4 / std::sqrt(static_cast<double>(s.n_layer));
  const double scale = 1.0 / std::sqrt(static_cast<double>(qk));
  const std::vector<float>& ff = m.t("rope_factors_short.weight");
  // NeoX pairs (i, i + rp/2) of a rotary part, angle p base^(-2i/rp) / factor_i.
  auto rotate = [&](double* v, int64_t p) {
    for (int64_t i = 0; i < rp / 2; ++i) {
      const double a = static_cast<double>(p) * std::pow(10000.0, -2.0 * static_cast<double>(i) / rp) / ff[i];
      const double c = std::cos(a), sn = std::sin(a), x0 = v[i], x1 = v[i + rp / 2];
      v[i] = x0 * c - x1 * sn;
      v[i + rp / 2] = x0 * sn + x1 * c;
    }
  };
  Rows x(static_cast<size_t>(n * e));
  const std::vector<float>& embd = m.t("token_embd.weight");
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t c = 0; c < e; ++c) x[t * e + c] = 12.0 * embd[tokens[t] * e + c];
  }
  for (int64_t il = 0; il < s.n_layer; ++il) {
    auto w = [&](const char* name) -> const std::vector<float>& { return m.t("blk." + std::to_string(il) + "." + name); };
    Rows h = x;
    rms_norm(h, e, w("attn_norm.weight"), eps);
    Rows qa = linear(h, n, w("attn_q_a.weight"), e, s.q_lora);
    rms_norm(qa, s.q_lora, w("attn_q_a_norm.weight"), eps);
    Rows q = linear(qa, n, w("attn_q_b.weight"), s.q_lora, H * qk);
    Rows kv = linear(h, n, w("attn_kv_a_mqa.weight"), e, lat + rp);
    Rows c(static_cast<size_t>(n * lat));
    for (int64_t t = 0; t < n; ++t) std::copy_n(kv.begin() + t * (lat + rp), lat, c.begin() + t * lat);
    rms_norm(c, lat, w("attn_kv_a_norm.weight"), eps);
    const Rows kvb = linear(c, n, w("attn_kv_b.weight"), lat, H * (nope + vd));
    for (int64_t t = 0; t < n; ++t) {
      rotate(kv.data() + t * (lat + rp) + lat, t);
      for (int64_t hh = 0; hh < H; ++hh) rotate(q.data() + (t * H + hh) * qk + nope, t);
    }
    Rows att(static_cast<size_t>(n * H * vd), 0.0);
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
    Rows o = linear(att, n, w("attn_output.weight"), H * vd, e);
    for (double& v : o) v *= res;
    add_inplace(x, o);
    h = x;
    rms_norm(h, e, w("ffn_norm.weight"), eps);
    Rows f = gated_ffn(h, n, e, s.n_ff, w("ffn_gate.weight").data(), w("ffn_up.weight").data(),
                       w("ffn_down.weight").data(), silu);
    for (double& v : f) v *= res;
    add_inplace(x, f);
  }
  rms_norm(x, e, m.t("output_norm.weight"), eps);
  for (double& v : x) v *= 256.0 / static_cast<double>(e);
  return linear(x, n, m.t("output.weight"), e, d::kVocab);
}

}  // namespace ref
}  // namespace ferrite::test
