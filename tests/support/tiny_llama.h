// A tiny random-weight llama-family model written to a temporary GGUF
// (model/tiny_gguf.h): any vocabulary (copied from a vocab GGUF or given),
// any number of layers, and the RoPE variants the runtime implements
// (linear and YaRN scaling, Llama 3's rope_freqs factors, NeoX pairing via
// qwen2). With `clean_output`, the output rows of every token whose text is
// not plain ASCII letters and spaces are zero, so that greedy decoding picks
// readable tokens (its random rows have a positive maximum) and the decoded
// text is valid UTF-8 whatever the weights.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "model/tiny_gguf.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::test {

struct TinyLlamaConfig {
  std::string arch = "llama";   // "llama" (adjacent pairs) or "qwen2" (NeoX pairs)
  int64_t n_layer = 1;
  int64_t n_embd = 32;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t n_ff = 64;
  int64_t n_ctx_train = 2048;
  float freq_base = 10000.0f;
  std::string rope_scaling;     // "", "linear" or "yarn"
  float rope_factor = 1.0f;     // rope.scaling.factor
  int64_t n_ctx_orig = 0;       // rope.scaling.original_context_length (YaRN)
  bool llama3_freqs = false;    // a rope_freqs.weight tensor (Llama 3's scaling)
  bool clean_output = false;
  uint32_t seed = 7;
};

// Writes the model; `vocab` is copied (tokenizer.* keys) into it.
inline std::unique_ptr<TinyGguf> make_tiny_llama(const gguf::File& vocab, const TinyLlamaConfig& c) {
  auto g = std::make_unique<TinyGguf>(c.arch, c.seed);
  gguf::Writer& w = g->writer();
  for (const auto& kv : vocab.metadata()) {
    if (kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);
  }
  const gguf::Value* tokens = vocab.find("tokenizer.ggml.tokens");
  const int64_t n_vocab = static_cast<int64_t>(tokens->size());
  const int64_t hd = c.n_embd / c.n_head;
  g->set_u32("context_length", static_cast<uint32_t>(c.n_ctx_train));
  g->set_u32("embedding_length", static_cast<uint32_t>(c.n_embd));
  g->set_u32("block_count", static_cast<uint32_t>(c.n_layer));
  g->set_u32("feed_forward_length", static_cast<uint32_t>(c.n_ff));
  g->set_u32("attention.head_count", static_cast<uint32_t>(c.n_head));
  g->set_u32("attention.head_count_kv", static_cast<uint32_t>(c.n_head_kv));
  g->set_f32("attention.layer_norm_rms_epsilon", 1e-5f);
  g->set_u32("rope.dimension_count", static_cast<uint32_t>(hd));
  g->set_f32("rope.freq_base", c.freq_base);
  if (!c.rope_scaling.empty()) {
    g->set_str("rope.scaling.type", c.rope_scaling);
    g->set_f32("rope.scaling.factor", c.rope_factor);
    if (c.n_ctx_orig > 0) g->set_u32("rope.scaling.original_context_length", static_cast<uint32_t>(c.n_ctx_orig));
  }
  g->add("token_embd.weight", {c.n_embd, n_vocab}, 1.0f);
  if (c.llama3_freqs) g->add("rope_freqs.weight", {hd / 2}, 0.5f, 2.0f);  // divisors near 2, as Llama 3's
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    g->add_norm(p + "attn_norm.weight", c.n_embd);
    g->add_linear(p + "attn_q.weight", c.n_embd, c.n_head * hd);
    g->add_linear(p + "attn_k.weight", c.n_embd, c.n_head_kv * hd);
    g->add_linear(p + "attn_v.weight", c.n_embd, c.n_head_kv * hd);
    if (c.arch == "qwen2") {
      g->add(p + "attn_q.bias", {c.n_head * hd}, 0.1f);
      g->add(p + "attn_k.bias", {c.n_head_kv * hd}, 0.1f);
      g->add(p + "attn_v.bias", {c.n_head_kv * hd}, 0.1f);
    }
    g->add_linear(p + "attn_output.weight", c.n_head * hd, c.n_embd);
    g->add_norm(p + "ffn_norm.weight", c.n_embd);
    g->add_linear(p + "ffn_gate.weight", c.n_embd, c.n_ff);
    g->add_linear(p + "ffn_up.weight", c.n_embd, c.n_ff);
    g->add_linear(p + "ffn_down.weight", c.n_ff, c.n_embd);
  }
  g->add_norm("output_norm.weight", c.n_embd);
  g->add("output.weight", {c.n_embd, n_vocab}, 1.0f);
  if (c.clean_output) {
    const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(vocab);
    std::vector<float>& out = g->values("output.weight");
    for (int64_t id = 0; id < n_vocab; ++id) {
      const std::string piece = tok.is_control(static_cast<int32_t>(id)) ? "" : tok.token_to_piece(static_cast<int32_t>(id), false);
      bool clean = !piece.empty();
      for (char ch : piece) clean = clean && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == ' ');
      if (!clean) std::fill_n(out.begin() + id * c.n_embd, c.n_embd, 0.0f);
    }
  }
  g->write();
  return g;
}

}  // namespace ferrite::test
