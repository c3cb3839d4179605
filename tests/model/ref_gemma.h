// gemma and gemma3: a tiny random GGUF laid out as llama.cpp's converter
// writes these architectures, and a reference forward written from their
// published definition (Hugging Face transformers' Gemma / Gemma3), in terms
// of what the GGUF stores:
//   x = embed(tokens) * sqrt(n_embd)
//   per layer:
//     h = rms_norm(x) * attn_norm        (Gemma's RMSNorm scales by 1 + w; the
//                                         converter stores 1 + w, so the file's
//                                         weight multiplies directly)
//     q, k, v = h Wq, h Wk, h Wv         (head_dim = attention.key_length)
//     gemma3: q, k = rms_norm per head * q_norm / k_norm
//     q, k = NeoX RoPE; gemma3's sliding layers use base 10000 and no
//            scaling, its global layers rope.freq_base and the linear
//            rope.scaling.factor when the file has one
//     a = Wo · softmax(q k^T * query_scale, causal [+ window]) v   (GQA);
//         query_scale = 1/sqrt(query_pre_attn_scalar): head_dim for every
//         size but gemma3-27B, whose n_embd / n_head the GGUF does not store
//         (llama.cpp recognises that size by its 62 layers)
//     gemma3: a = rms_norm(a) * post_attention_norm
//     x += a
//     h = rms_norm(x) * ffn_norm
//     f = down(gelu_tanh(gate h) * up h)
//     gemma3: f = rms_norm(f) * post_ffw_norm
//     x += f
//   logits = token_embd · (rms_norm(x) * output_norm)   (tied output)
// gemma3's layers slide except every sixth (layer il is global when
// (il + 1) % 6 == 0, as llama.cpp's pattern of 6); a sliding layer hides keys
// with pos_q - pos_k >= attention.sliding_window.
#pragma once

#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "model/ref_common.h"
#include "model/tiny_gguf.h"

namespace ferrite::test {

struct GemmaConfig {
  int version = 1;  // 1: gemma, 3: gemma3
  int64_t n_vocab = 40, n_embd = 32, n_layer = 2, n_head = 4, n_head_kv = 1, head_dim = 16, n_ff = 48;
  int64_t n_swa = 0;             // gemma3: attention.sliding_window (0: key absent)
  double rope_linear = 0.0;      // gemma3: rope.scaling.factor (0: none)
  double eps = 1e-6, freq_base = 10000.0;
  int64_t n_ctx = 64;
  double embd_scale = 4.0;       // token_embd std, in units of 1/sqrt(n_embd)
  bool ref_scale_embd = true;    // reference only: false skips the sqrt(n_embd) input scaling
  double query_pre_attn_scalar = 0;  // queries scaled by its 1/sqrt (0: head_dim)
};

class TinyGemma {
 public:
  static constexpr int64_t kSlidingPattern = 6;
  static constexpr double kLocalRopeBase = 10000.0;

  explicit TinyGemma(const GemmaConfig& c, uint32_t seed = 13)
      : c_(c), g_(c.version == 3 ? "gemma3" : "gemma", seed) {
    g_.set_u32("context_length", static_cast<uint32_t>(c.n_ctx));
    g_.set_u32("embedding_length", static_cast<uint32_t>(c.n_embd));
    g_.set_u32("block_count", static_cast<uint32_t>(c.n_layer));
    g_.set_u32("feed_forward_length", static_cast<uint32_t>(c.n_ff));
    g_.set_u32("attention.head_count", static_cast<uint32_t>(c.n_head));
    g_.set_u32("attention.head_count_kv", static_cast<uint32_t>(c.n_head_kv));
    g_.set_u32("attention.key_length", static_cast<uint32_t>(c.head_dim));
    g_.set_u32("attention.value_length", static_cast<uint32_t>(c.head_dim));
    g_.set_f32("attention.layer_norm_rms_epsilon", static_cast<float>(c.eps));
    g_.set_f32("rope.freq_base", static_cast<float>(c.freq_base));
    if (c.version == 3) {
      if (c.n_swa > 0) g_.set_u32("attention.sliding_window", static_cast<uint32_t>(c.n_swa));
      if (c.rope_linear > 0) {
        g_.set_str("rope.scaling.type", "linear");
        g_.set_f32("rope.scaling.factor", static_cast<float>(c.rope_linear));
      }
    }
    const int64_t n_q = c.n_head * c.head_dim, n_kv = c.n_head_kv * c.head_dim;
    // Embeddings of the order 1/sqrt(n_embd) as trained ones: the input is
    // scaled up by sqrt(n_embd), the tied output uses them as they are.
    g_.add("token_embd.weight", {c.n_embd, c.n_vocab},
           static_cast<float>(c.embd_scale / std::sqrt(static_cast<double>(c.n_embd))));
    for (int64_t il = 0; il < c.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      g_.add_norm(p + "attn_norm.weight", c.n_embd);
      g_.add_linear(p + "attn_q.weight", c.n_embd, n_q);
      g_.add_linear(p + "attn_k.weight", c.n_embd, n_kv);
      g_.add_linear(p + "attn_v.weight", c.n_embd, n_kv);
      if (c.version == 3) {
        g_.add_norm(p + "attn_q_norm.weight", c.head_dim);
        g_.add_norm(p + "attn_k_norm.weight", c.head_dim);
      }
      g_.add_linear(p + "attn_output.weight", n_q, c.n_embd);
      if (c.version == 3) g_.add_norm(p + "post_attention_norm.weight", c.n_embd);
      g_.add_norm(p + "ffn_norm.weight", c.n_embd);
      g_.add_linear(p + "ffn_gate.weight", c.n_embd, c.n_ff);
      g_.add_linear(p + "ffn_up.weight", c.n_embd, c.n_ff);
      g_.add_linear(p + "ffn_down.weight", c.n_ff, c.n_embd);
      if (c.version == 3) g_.add_norm(p + "post_ffw_norm.weight", c.n_embd);
    }
    g_.add_norm("output_norm.weight", c.n_embd);
    g_.write();
  }

  const std::filesystem::path& path() const { return g_.path(); }
  GemmaConfig& config() { return c_; }

  // Without a window (gemma3 files may lack the key) no layer slides.
  bool sliding(int64_t il) const { return c_.version == 3 && c_.n_swa > 0 && (il + 1) % kSlidingPattern != 0; }

  // Logits [n, n_vocab] of one sequence at positions 0..n-1.
  ref::Rows reference(const std::vector<int32_t>& tokens) const {
    const int64_t n = static_cast<int64_t>(tokens.size()), n_embd = c_.n_embd, hd = c_.head_dim;
    const int64_t n_q = c_.n_head * hd, n_kv = c_.n_head_kv * hd;
    std::vector<int32_t> pos(tokens.size());
    std::iota(pos.begin(), pos.end(), 0);
    const ref::Rope global{hd, /*neox*/ true, c_.freq_base, c_.rope_linear > 0 ? 1.0 / c_.rope_linear : 1.0};
    const ref::Rope local{hd, /*neox*/ true, kLocalRopeBase, 1.0};
    const double query_scale =
        1.0 / std::sqrt(c_.query_pre_attn_scalar > 0 ? c_.query_pre_attn_scalar : static_cast<double>(hd));
    const auto& emb = g_.t("token_embd.weight");
    const double embd_scale = c_.ref_scale_embd ? std::sqrt(static_cast<double>(n_embd)) : 1.0;
    ref::Rows x(static_cast<size_t>(n * n_embd));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t d = 0; d < n_embd; ++d) x[i * n_embd + d] = emb[tokens[i] * n_embd + d] * embd_scale;
    }
    for (int64_t il = 0; il < c_.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      const bool swa = sliding(il);
      ref::Rows h = x;
      ref::rms_norm(h, n_embd, g_.t(p + "attn_norm.weight"), c_.eps);
      ref::Rows q = ref::linear(h, n, g_.t(p + "attn_q.weight"), n_embd, n_q);
      ref::Rows k = ref::linear(h, n, g_.t(p + "attn_k.weight"), n_embd, n_kv);
      const ref::Rows v = ref::linear(h, n, g_.t(p + "attn_v.weight"), n_embd, n_kv);
      if (c_.version == 3) {
        ref::rms_norm(q, hd, g_.t(p + "attn_q_norm.weight"), c_.eps);
        ref::rms_norm(k, hd, g_.t(p + "attn_k_norm.weight"), c_.eps);
      }
      ref::rope(q, n, c_.n_head, hd, pos, swa ? local : global);
      ref::rope(k, n, c_.n_head_kv, hd, pos, swa ? local : global);
      const ref::Rows a =
          ref::attention(q, k, v, pos, n, c_.n_head, c_.n_head_kv, hd, query_scale, swa ? c_.n_swa : 0);
      ref::Rows o = ref::linear(a, n, g_.t(p + "attn_output.weight"), n_q, n_embd);
      if (c_.version == 3) ref::rms_norm(o, n_embd, g_.t(p + "post_attention_norm.weight"), c_.eps);
      ref::add_inplace(x, o);

      h = x;
      ref::rms_norm(h, n_embd, g_.t(p + "ffn_norm.weight"), c_.eps);
      ref::Rows f = ref::gated_ffn(h, n, n_embd, c_.n_ff, g_.t(p + "ffn_gate.weight").data(),
                                   g_.t(p + "ffn_up.weight").data(), g_.t(p + "ffn_down.weight").data(),
                                   ref::gelu_f16);
      if (c_.version == 3) ref::rms_norm(f, n_embd, g_.t(p + "post_ffw_norm.weight"), c_.eps);
      ref::add_inplace(x, f);
    }
    ref::rms_norm(x, n_embd, g_.t("output_norm.weight"), c_.eps);
    return ref::linear(x, n, emb, n_embd, c_.n_vocab);
  }

 private:
  GemmaConfig c_;
  TinyGguf g_;
};

}  // namespace ferrite::test
