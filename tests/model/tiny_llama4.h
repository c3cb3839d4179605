// A tiny random F32 llama4 (Llama 4 text model) in llama.cpp's layout:
// four layers, so that the RoPE layers (0-2, chunked attention, q/k norm)
// and the NoPE layer (3, whole context, temperature-scaled queries) both
// appear, and with interleave_moe_layer_step 2 dense layers (0, 2) and
// expert layers (1, 3: sigmoid router, top-k, shared expert). Chunks of 8
// positions and a temperature floor of 4 (attention.chunk_size,
// attention.temperature_length, attention.temperature_scale 0.5) make each
// quirk move the logits of a 28-token prompt. The 320-token vocabulary of
// tiny_families.h lets llama.cpp-family tools load it. The weights come from
// TinyGguf's seeded generator: the same file on every run and host.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/tiny_families.h"
#include "model/tiny_gguf.h"

namespace ferrite::test {

struct Llama4Config {
  int64_t n_layer = 4, n_embd = 64, n_head = 4, n_head_kv = 2, head_dim = 16;
  int64_t n_ff = 96, n_ff_exp = 32;
  int64_t n_expert = 4, n_expert_used = 1;
  int64_t moe_step = 2;                     // interleave_moe_layer_step (> n_layer: no expert layer; 0: invalid)
  int64_t chunk = 8;                        // attention.chunk_size (0: key not written)
  float temp_floor = 4.0f, temp_scale = 0.5f;  // attention.temperature_length / _scale
  uint32_t seed = 44001;
};

// The prompt of the tests and goldens: <s> then 27 ids (more than three chunks of 8).
inline std::vector<int32_t> tiny_llama4_prompt() {
  std::vector<int32_t> t = {1};
  for (int i = 0; i < 27; ++i) t.push_back((13 * i * i + 5 * i + 9) % 317 + 3);
  return t;
}

inline std::unique_ptr<TinyGguf> make_tiny_llama4(const Llama4Config& c) {
  auto g = std::make_unique<TinyGguf>("llama4", c.seed);
  tiny_family_detail::add_vocab(*g);
  const int64_t e = c.n_embd, n_q = c.n_head * c.head_dim, n_kv = c.n_head_kv * c.head_dim;
  g->set_u32("context_length", 256);
  g->set_u32("embedding_length", static_cast<uint32_t>(e));
  g->set_u32("block_count", static_cast<uint32_t>(c.n_layer));
  g->set_u32("feed_forward_length", static_cast<uint32_t>(c.n_ff));
  g->set_u32("attention.head_count", static_cast<uint32_t>(c.n_head));
  g->set_u32("attention.head_count_kv", static_cast<uint32_t>(c.n_head_kv));
  g->set_f32("attention.layer_norm_rms_epsilon", 1e-5f);
  g->set_u32("rope.dimension_count", static_cast<uint32_t>(c.head_dim));
  g->set_f32("rope.freq_base", 10000.0f);
  g->set_u32("expert_count", static_cast<uint32_t>(c.n_expert));
  g->set_u32("expert_used_count", static_cast<uint32_t>(c.n_expert_used));
  g->set_u32("expert_feed_forward_length", static_cast<uint32_t>(c.n_ff_exp));
  g->set_u32("interleave_moe_layer_step", static_cast<uint32_t>(c.moe_step));
  if (c.chunk > 0) g->set_u32("attention.chunk_size", static_cast<uint32_t>(c.chunk));
  g->set_f32("attention.temperature_length", c.temp_floor);
  g->set_f32("attention.temperature_scale", c.temp_scale);
  g->add("token_embd.weight", {e, 320}, 1.0f);
  g->add_norm("output_norm.weight", e);
  g->add_linear("output.weight", e, 320);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    g->add_norm(p + "attn_norm.weight", e);
    g->add_linear(p + "attn_q.weight", e, n_q);
    g->add_linear(p + "attn_k.weight", e, n_kv);
    g->add_linear(p + "attn_v.weight", e, n_kv);
    g->add_linear(p + "attn_output.weight", n_q, e);
    g->add_norm(p + "ffn_norm.weight", e);
    if (c.moe_step == 0 || (il + 1) % c.moe_step != 0) {  // 0: a bad file, every layer dense
      g->add_linear(p + "ffn_gate.weight", e, c.n_ff);
      g->add_linear(p + "ffn_up.weight", e, c.n_ff);
      g->add_linear(p + "ffn_down.weight", c.n_ff, e);
      continue;
    }
    // A router of larger logits, so that the sigmoid weights spread over (0, 1).
    g->add(p + "ffn_gate_inp.weight", {e, c.n_expert}, 3.0f / std::sqrt(static_cast<float>(e)));
    const float s_in = 1.0f / std::sqrt(static_cast<float>(e)), s_ff = 1.0f / std::sqrt(static_cast<float>(c.n_ff_exp));
    g->add(p + "ffn_gate_exps.weight", {e, c.n_ff_exp, c.n_expert}, s_in);
    g->add(p + "ffn_up_exps.weight", {e, c.n_ff_exp, c.n_expert}, s_in);
    g->add(p + "ffn_down_exps.weight", {c.n_ff_exp, e, c.n_expert}, s_ff);
    g->add_linear(p + "ffn_gate_shexp.weight", e, c.n_ff_exp);
    g->add_linear(p + "ffn_up_shexp.weight", e, c.n_ff_exp);
    g->add_linear(p + "ffn_down_shexp.weight", c.n_ff_exp, e);
  }
  g->write();
  return g;
}

}  // namespace ferrite::test
