// Tiny random models of the GPT-style families (model/gpt_style.h: phi2,
// starcoder, bloom, mpt, refact, jais, qwen, codeshell, chatglm) in the tensor names,
// shapes and metadata keys of llama.cpp's converter, with the first
// kVocab tokens of shared/vocab/ggml-vocab-llama-spm.gguf as their
// tokenizer, so that llama.cpp c392e50 loads the same file: its logits of
// two prompts (tests/model/golden/tiny-<arch>.json, made by the lead's
// golden_dump on the file this writes) are the expected values. The weights
// come from TinyGguf's seeded std::mt19937 and std::normal_distribution
// (libstdc++'s, the same on x86-64 and aarch64).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "model/tiny_gguf.h"

namespace ferrite::test {

struct TinyGptConfig {
  std::string arch;
  int64_t n_embd = 96, n_head = 6, n_head_kv = 6, n_ff = 192, n_layer = 2, n_ctx = 256;
  int64_t n_rot = 0;           // rope.dimension_count (0: no key)
  float max_alibi_bias = 0.0f; // attention.max_alibi_bias (0: no key)
  float clamp_kqv = 0.0f;      // attention.clamp_kqv (0: no key)
  bool rms = false;            // RMSNorm (no norm biases), else LayerNorm with biases
  bool fused_qkv = true;
  bool qkv_bias = true, out_bias = true, ffn_bias = true;
  bool gate = false;           // ffn_gate (gated feed-forward)
  bool fused_gate_up = false;  // ffn_up holds gate | up (chatglm)
  bool parallel = false;       // no ffn_norm (phi2)
  bool pos_embd = false, tok_norm = false, output_bias = false;
  bool ff_length_doubled = false;  // qwen: feed_forward_length is twice the tensors' width
  std::string zero_tensor;         // a tensor written as zeros (the tests' missing-quirk checks)
};

// The configuration of each family's test model ("mpt-clamp": mpt with clamp_kqv).
inline TinyGptConfig tiny_gpt_config(const std::string& name) {
  TinyGptConfig c;
  const bool mpt_clamp = name == "mpt-clamp";
  const std::string arch = mpt_clamp ? "mpt" : name;
  c.arch = arch;
  if (mpt_clamp) c.clamp_kqv = 0.5f;  // most Q|K|V values of the tiny model lie beyond
  if (arch == "phi2") {
    c.n_embd = 64, c.n_head = 4, c.n_head_kv = 4, c.n_rot = 8;  // partial: 8 of 16 dimensions
    c.parallel = true, c.output_bias = true;
  } else if (arch == "starcoder") {
    c.n_head_kv = 1, c.pos_embd = true;
  } else if (arch == "bloom") {
    c.tok_norm = true;
  } else if (arch == "mpt") {
    c.max_alibi_bias = 8.0f, c.qkv_bias = c.out_bias = c.ffn_bias = false;
  } else if (arch == "refact") {
    c.n_head_kv = 1, c.rms = true, c.fused_qkv = false, c.gate = true;
    c.qkv_bias = c.out_bias = c.ffn_bias = false;
  } else if (arch == "jais") {
    c.max_alibi_bias = 8.0f, c.gate = true;
  } else if (arch == "qwen") {
    c.n_embd = 64, c.n_head = 4, c.n_head_kv = 4, c.n_rot = 16;
    c.rms = true, c.gate = true, c.out_bias = c.ffn_bias = false, c.ff_length_doubled = true;
  } else if (arch == "chatglm") {
    c.n_embd = 64, c.n_head = 4, c.n_head_kv = 2, c.n_rot = 8;  // RoPE over half of each head
    c.rms = true, c.fused_gate_up = true, c.out_bias = c.ffn_bias = false;
  } else if (arch == "gptj") {
    c.n_embd = 64, c.n_head = 4, c.n_head_kv = 4, c.n_rot = 8;  // rotary_dim 8 of 16
    c.fused_qkv = false, c.qkv_bias = c.out_bias = false, c.parallel = true, c.output_bias = true;
  } else if (arch == "codeshell") {
    c.n_head = 4, c.n_head_kv = 2, c.n_embd = 64, c.n_rot = 16;
  }
  return c;
}

class TinyGpt {
 public:
  static constexpr int64_t kVocab = 512;

  // vocab: the SPM vocabulary file whose first kVocab tokens the model uses.
  TinyGpt(const TinyGptConfig& c, const std::filesystem::path& vocab, uint32_t seed = 7) : g_(c.arch, seed) {
    const int64_t hd = c.n_embd / c.n_head, n_kv = c.n_head_kv * hd;
    g_.set_u32("context_length", static_cast<uint32_t>(c.n_ctx));
    g_.set_u32("embedding_length", static_cast<uint32_t>(c.n_embd));
    g_.set_u32("feed_forward_length", static_cast<uint32_t>(c.ff_length_doubled ? 2 * c.n_ff : c.n_ff));
    g_.set_u32("block_count", static_cast<uint32_t>(c.n_layer));
    g_.set_u32("attention.head_count", static_cast<uint32_t>(c.n_head));
    g_.set_u32("attention.head_count_kv", static_cast<uint32_t>(c.n_head_kv));
    if (c.rms) {
      g_.set_f32("attention.layer_norm_rms_epsilon", 1e-5f);
    } else {
      g_.set_f32("attention.layer_norm_epsilon", 1e-5f);
    }
    if (c.n_rot > 0) g_.set_u32("rope.dimension_count", static_cast<uint32_t>(c.n_rot));
    if (c.max_alibi_bias > 0.0f) g_.set_f32("attention.max_alibi_bias", c.max_alibi_bias);
    if (c.clamp_kqv > 0.0f) g_.set_f32("attention.clamp_kqv", c.clamp_kqv);
    copy_vocab(vocab);

    g_.add("token_embd.weight", {c.n_embd, kVocab}, 1.0f);
    if (c.pos_embd) g_.add("position_embd.weight", {c.n_embd, c.n_ctx}, 0.5f);
    if (c.tok_norm) norm(c, "token_embd_norm", c.n_embd);
    for (int64_t il = 0; il < c.n_layer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      norm(c, p + "attn_norm", c.n_embd);
      if (c.fused_qkv) {
        linear(p + "attn_qkv", c.n_embd, c.n_embd + 2 * n_kv, c.qkv_bias);
      } else {
        linear(p + "attn_q", c.n_embd, c.n_embd, c.qkv_bias);
        linear(p + "attn_k", c.n_embd, n_kv, c.qkv_bias);
        linear(p + "attn_v", c.n_embd, n_kv, c.qkv_bias);
      }
      linear(p + "attn_output", c.n_embd, c.n_embd, c.out_bias);
      if (!c.parallel) norm(c, p + "ffn_norm", c.n_embd);
      if (c.gate) linear(p + "ffn_gate", c.n_embd, c.n_ff, c.ffn_bias);
      linear(p + "ffn_up", c.n_embd, c.fused_gate_up ? 2 * c.n_ff : c.n_ff, c.ffn_bias);
      linear(p + "ffn_down", c.n_ff, c.n_embd, c.ffn_bias);
    }
    norm(c, "output_norm", c.n_embd);
    linear("output", c.n_embd, kVocab, c.output_bias);
    if (!c.zero_tensor.empty()) {
      for (float& x : g_.values(c.zero_tensor)) x = 0.0f;
    }
    g_.write();
  }

  const std::filesystem::path& path() const { return g_.path(); }
  const TinyGguf& gguf() const { return g_; }

 private:
  void norm(const TinyGptConfig& c, const std::string& name, int64_t n) {
    g_.add_norm(name + ".weight", n);
    if (!c.rms) g_.add(name + ".bias", {n}, 0.1f);
  }
  void linear(const std::string& name, int64_t n_in, int64_t n_out, bool bias) {
    g_.add_linear(name + ".weight", n_in, n_out);
    if (bias) g_.add(name + ".bias", {n_out}, 0.1f);
  }
  // The tokenizer.* keys of the vocabulary, its per-token arrays cut to kVocab.
  void copy_vocab(const std::filesystem::path& vocab) {
    const gguf::File v = gguf::File::open(vocab.string());
    const gguf::Value* tokens = v.find("tokenizer.ggml.tokens");
    if (tokens == nullptr) throw std::runtime_error(vocab.string() + ": no tokenizer.ggml.tokens");
    const size_t n_all = tokens->size();
    for (const auto& kv : v.metadata()) {
      if (kv.key.rfind("tokenizer.", 0) != 0 || kv.key == "tokenizer.chat_template") continue;
      if (kv.value.is_array() && kv.value.size() == n_all) {
        std::vector<gguf::Value> first(kv.value.items().begin(), kv.value.items().begin() + kVocab);
        g_.writer().set(kv.key, gguf::Value::array(kv.value.array_type(), std::move(first)));
      } else {
        g_.writer().set(kv.key, kv.value);
      }
    }
  }

  TinyGguf g_;
};

}  // namespace ferrite::test
