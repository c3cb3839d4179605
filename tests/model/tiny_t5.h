// Tiny random F32 T5 models in llama.cpp c392e50's layout (the names and
// keys its converter writes for T5ForConditionalGeneration and T5EncoderModel):
// 2 encoder and 2 decoder layers, 4 heads of 24 (so n_head * head_dim = 96
// differs from n_embd = 64, as in t5-3b), 32 relative position buckets,
// attn_rel_b in layer 0 only (as HF T5 holds it; later layers reuse it),
// the 320-token vocabulary of tiny_families.h, decoder_start_token_id 0.
// Variants (T5Variant): Relu, t5's ReLU feed-forward with the output tied to
// the token table; Gated, flan-t5's gated GELU with its own output.weight;
// Encoder, t5encoder (gated) alone. The goldens under tests/model/golden/
// (t5-relu, t5-gated, t5encoder .p<N>.json) hold llama.cpp's numbers for
// them (golden_dump --enc, --embd; tests/runtime/t5_test.cpp says how).
//
// quirk = false writes the same weights with a T5 feature neutralised:
// NoRelBias, attn_rel_b all zeros; Scaled, attn_q (encoder, decoder and
// cross) times 1/sqrt(head_dim), which is the usual scaled attention.
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "model/tiny_families.h"
#include "model/tiny_gguf.h"

namespace ferrite::test {

enum class T5Variant { Relu, Gated, Encoder };
enum class T5Quirk { None, NoRelBias, Scaled };

constexpr int64_t kT5Embd = 64, kT5Head = 4, kT5HeadDim = 24, kT5Ff = 96, kT5Buckets = 32;
constexpr int32_t kT5DecoderStart = 0;

inline std::string t5_golden_name(T5Variant v) {
  return v == T5Variant::Relu ? "t5-relu" : v == T5Variant::Gated ? "t5-gated" : "t5encoder";
}

// The encoder's input of prompt 1 or 2 (no BOS; ends with </s>, 2).
inline std::vector<int32_t> t5_encoder_prompt(int which) {
  std::vector<int32_t> t = tiny_family_prompt(which);
  t.erase(t.begin());
  t.push_back(2);
  return t;
}

// The decoder's tokens of prompt 1 or 2: the decoder start token, then 23 or
// 7 others (prompt 1 reaches distances past the 16 exact causal buckets).
inline std::vector<int32_t> t5_decoder_prompt(int which) {
  std::vector<int32_t> t = {kT5DecoderStart};
  const int n = which == 1 ? 23 : 7;
  for (int i = 0; i < n; ++i) t.push_back((13 * i * i + 5 * i + 17) % 317 + 3 - (which == 2 ? 1 : 0));
  return t;
}

inline std::unique_ptr<TinyGguf> make_tiny_t5(T5Variant v, T5Quirk quirk = T5Quirk::None) {
  const bool encoder_only = v == T5Variant::Encoder;
  const bool gated = v != T5Variant::Relu;
  const std::string arch = encoder_only ? "t5encoder" : "t5";
  auto g = std::make_unique<TinyGguf>(arch, v == T5Variant::Relu ? 51501u : v == T5Variant::Gated ? 51601u : 51701u);
  tiny_family_detail::add_vocab(*g);
  const int64_t e = kT5Embd, q = kT5Head * kT5HeadDim, ff = kT5Ff;
  g->set_u32("context_length", 512);
  g->set_u32("embedding_length", static_cast<uint32_t>(e));
  g->set_u32("feed_forward_length", static_cast<uint32_t>(ff));
  g->set_u32("block_count", 2);
  g->set_u32("attention.head_count", kT5Head);
  g->set_u32("attention.key_length", kT5HeadDim);
  g->set_u32("attention.value_length", kT5HeadDim);
  g->set_f32("attention.layer_norm_rms_epsilon", 1e-6f);
  g->set_u32("attention.relative_buckets_count", kT5Buckets);
  if (!encoder_only) g->set_u32("decoder_start_token_id", static_cast<uint32_t>(kT5DecoderStart));
  // The relu variant's output is this table (tied): rows of norm ~2 keep its logits of order 2-6, where
  // an f16 rounding that flips between the engines (the cache, q and p) stays within the tests' 1e-3.
  g->add("token_embd.weight", {e, tiny_family_detail::kVocab}, gated ? 0.5f : 0.25f);
  // Scores of order 2-3 without the 1/sqrt(head_dim) scale: q smaller than a unit projection.
  const float q_std = 0.5f / std::sqrt(static_cast<float>(e));
  auto attention = [&](const std::string& p, bool rel_b) {
    g->add(p + "q.weight", {e, q}, q_std);
    g->add_linear(p + "k.weight", e, q);
    g->add_linear(p + "v.weight", e, q);
    g->add_linear(p + "o.weight", q, e);
    if (rel_b) g->add(p + "rel_b.weight", {kT5Head, kT5Buckets}, 1.0f);
  };
  auto ffn = [&](const std::string& p) {
    g->add_norm(p + "ffn_norm.weight", e);
    if (gated) g->add_linear(p + "ffn_gate.weight", e, ff);
    g->add_linear(p + "ffn_up.weight", e, ff);
    g->add_linear(p + "ffn_down.weight", ff, e);
  };
  for (int il = 0; il < 2; ++il) {
    const std::string p = "enc.blk." + std::to_string(il) + ".";
    g->add_norm(p + "attn_norm.weight", e);
    attention(p + "attn_", il == 0);
    ffn(p);
  }
  g->add_norm("enc.output_norm.weight", e);
  if (!encoder_only) {
    for (int il = 0; il < 2; ++il) {
      const std::string p = "dec.blk." + std::to_string(il) + ".";
      g->add_norm(p + "attn_norm.weight", e);
      attention(p + "attn_", il == 0);
      g->add_norm(p + "cross_attn_norm.weight", e);
      attention(p + "cross_attn_", false);
      ffn(p);
    }
    g->add_norm("dec.output_norm.weight", e);
    if (gated) g->add_linear("output.weight", e, tiny_family_detail::kVocab);
  }
  if (quirk == T5Quirk::NoRelBias) {
    for (const char* s : {"enc.blk.0.attn_rel_b.weight", "dec.blk.0.attn_rel_b.weight"}) {
      if (g->has(s)) for (float& x : g->values(s)) x = 0.0f;
    }
  } else if (quirk == T5Quirk::Scaled) {
    const float c = 1.0f / std::sqrt(static_cast<float>(kT5HeadDim));
    for (int il = 0; il < 2; ++il) {
      for (const std::string& s : {"enc.blk." + std::to_string(il) + ".attn_q.weight",
                                   "dec.blk." + std::to_string(il) + ".attn_q.weight",
                                   "dec.blk." + std::to_string(il) + ".cross_attn_q.weight"}) {
        if (g->has(s)) for (float& x : g->values(s)) x *= c;
      }
    }
  }
  g->write();
  return g;
}

}  // namespace ferrite::test
