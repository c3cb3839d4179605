// Tiny random rwkv6 and rwkv7 models in llama.cpp's layout (tensor names,
// shapes and keys of its converter: time_mix_lerp_fused stacked, rwkv6's
// time_mix_w2 [extra, n_embd, 5], time_mix_first [head_size, n_head]) with
// the 320-token vocabulary of tiny_families.h, written by TinyGguf's seeded
// generator (the same file on every run). rwkv6's goldens in
// tests/model/golden/rwkv6.p<N>.json are llama.cpp c392e50's logits for the
// file (golden_dump); rwkv7 is checked against ref_rwkv.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "model/tiny_families.h"
#include "model/tiny_gguf.h"

namespace ferrite::test {

struct RwkvConfig {
  int version = 6;
  int64_t n_embd = 64, head_size = 16, n_layer = 3, n_ff = 96;
  int64_t mix_extra = 8, decay_extra = 12;                          // rwkv6
  int64_t decay_rank = 8, iclr_rank = 6, value_rank = 4, gate_rank = 10;  // rwkv7 (gate 0: none)
  int64_t rescale_every = 2;                                        // rwkv6 (0: none)
  bool qwen2 = false;      // rwkv6qwen2 (with version 6): RMS norms, GQA k/v of n_kv_head heads, SwiGLU FFN
  int64_t n_kv_head = 2;
  float decay_offset = -0.8f;  // rwkv6's time_mix_decay / rwkv7's w0 mean
};

namespace tiny_rwkv_detail {

inline void add_ln(TinyGguf& g, const std::string& name, int64_t n) {
  g.add_norm(name + ".weight", n);
  g.add(name + ".bias", {n}, 0.1f);
}

inline void add_common(TinyGguf& g, const RwkvConfig& c, const std::string& p) {
  const int64_t e = c.n_embd;
  add_ln(g, p + "attn_norm", e);
  add_ln(g, p + "attn_norm_2", e);
  g.add_linear(p + "time_mix_key.weight", e, e);
  g.add_linear(p + "time_mix_value.weight", e, e);
  g.add_linear(p + "time_mix_receptance.weight", e, e);
  g.add_linear(p + "time_mix_output.weight", e, e);
  add_ln(g, p + "time_mix_ln", e);
  g.add(p + "channel_mix_lerp_k.weight", {e}, 0.2f, 0.5f);
  g.add_linear(p + "channel_mix_key.weight", e, c.n_ff);
  g.add_linear(p + "channel_mix_value.weight", c.n_ff, e);
}

inline void add_rwkv6_layer(TinyGguf& g, const RwkvConfig& c, int64_t il) {
  const std::string p = "blk." + std::to_string(il) + ".";
  const int64_t e = c.n_embd;
  add_common(g, c, p);
  g.add(p + "time_mix_lerp_x.weight", {e}, 0.2f, 0.5f);
  g.add(p + "time_mix_lerp_fused.weight", {e, 1, 1, 5}, 0.2f, 0.5f);
  g.add(p + "time_mix_w1.weight", {e, 5 * c.mix_extra}, 0.5f / std::sqrt(static_cast<float>(e)));
  g.add(p + "time_mix_w2.weight", {c.mix_extra, e, 5}, 0.3f);
  g.add(p + "time_mix_first.weight", {c.head_size, e / c.head_size}, 0.3f);
  g.add(p + "time_mix_decay.weight", {e}, 0.5f, c.decay_offset);
  g.add(p + "time_mix_decay_w1.weight", {e, c.decay_extra}, 0.5f / std::sqrt(static_cast<float>(e)));
  g.add(p + "time_mix_decay_w2.weight", {c.decay_extra, e}, 0.3f);
  g.add_linear(p + "time_mix_gate.weight", e, e);
  g.add(p + "channel_mix_lerp_r.weight", {e}, 0.2f, 0.5f);
  g.add_linear(p + "channel_mix_receptance.weight", e, e);
}

inline void add_rwkv7_layer(TinyGguf& g, const RwkvConfig& c, int64_t il) {
  const std::string p = "blk." + std::to_string(il) + ".";
  const int64_t e = c.n_embd;
  const float in_std = 1.0f / std::sqrt(static_cast<float>(e));
  add_common(g, c, p);
  g.add(p + "time_mix_lerp_fused.weight", {e, 1, 1, c.gate_rank > 0 ? 6 : 5}, 0.2f, 0.5f);
  g.add(p + "time_mix_w0.weight", {e}, 0.5f, c.decay_offset);
  g.add(p + "time_mix_w1.weight", {e, c.decay_rank}, in_std);
  g.add(p + "time_mix_w2.weight", {c.decay_rank, e}, 0.3f);
  g.add(p + "time_mix_a0.weight", {e}, 0.5f);
  g.add(p + "time_mix_a1.weight", {e, c.iclr_rank}, in_std);
  g.add(p + "time_mix_a2.weight", {c.iclr_rank, e}, 0.3f);
  const int64_t vr = il == 0 ? c.iclr_rank : c.value_rank;  // llama.cpp's layer-0 shapes
  g.add(p + "time_mix_v0.weight", {e}, 0.5f);
  g.add(p + "time_mix_v1.weight", {e, vr}, in_std);
  g.add(p + "time_mix_v2.weight", {vr, e}, 0.3f);
  if (c.gate_rank > 0) {
    g.add(p + "time_mix_g1.weight", {e, c.gate_rank}, in_std);
    g.add(p + "time_mix_g2.weight", {c.gate_rank, e}, 0.5f);
  }
  g.add(p + "time_mix_k_k.weight", {e}, 0.2f, 0.9f);
  g.add(p + "time_mix_k_a.weight", {e}, 0.2f, 0.9f);
  g.add(p + "time_mix_r_k.weight", {e}, 0.3f);
}

inline void add_rwkv6qwen2_layer(TinyGguf& g, const RwkvConfig& c, int64_t il) {
  const std::string p = "blk." + std::to_string(il) + ".";
  const int64_t e = c.n_embd, kv = c.n_kv_head * c.head_size;
  g.add_norm(p + "attn_norm.weight", e);
  g.add(p + "time_mix_lerp_x.weight", {e}, 0.2f, 0.5f);
  g.add(p + "time_mix_lerp_fused.weight", {e, 1, 1, 5}, 0.2f, 0.5f);
  g.add(p + "time_mix_w1.weight", {e, 5 * c.mix_extra}, 0.5f / std::sqrt(static_cast<float>(e)));
  g.add(p + "time_mix_w2.weight", {c.mix_extra, e, 5}, 0.3f);
  g.add(p + "time_mix_decay.weight", {e}, 0.5f, c.decay_offset);
  g.add(p + "time_mix_decay_w1.weight", {e, c.decay_extra}, 0.5f / std::sqrt(static_cast<float>(e)));
  g.add(p + "time_mix_decay_w2.weight", {c.decay_extra, e}, 0.3f);
  g.add_linear(p + "time_mix_key.weight", e, kv);
  g.add_linear(p + "time_mix_value.weight", e, kv);
  g.add_linear(p + "time_mix_receptance.weight", e, e);
  g.add(p + "time_mix_key.bias", {kv}, 0.2f);
  g.add(p + "time_mix_value.bias", {kv}, 0.2f);
  g.add(p + "time_mix_receptance.bias", {e}, 0.2f);
  g.add_linear(p + "time_mix_gate.weight", e, e);
  g.add_linear(p + "time_mix_output.weight", e, e);
  g.add_norm(p + "ffn_norm.weight", e);
  g.add_linear(p + "ffn_gate.weight", e, c.n_ff);
  g.add_linear(p + "ffn_up.weight", e, c.n_ff);
  g.add_linear(p + "ffn_down.weight", c.n_ff, e);
}

}  // namespace tiny_rwkv_detail

inline std::unique_ptr<TinyGguf> make_tiny_rwkv(const RwkvConfig& c, uint32_t seed = 77) {
  namespace d = tiny_rwkv_detail;
  const std::string arch = c.version == 7 ? "rwkv7" : c.qwen2 ? "rwkv6qwen2" : "rwkv6";
  auto g = std::make_unique<TinyGguf>(arch, seed);
  tiny_family_detail::add_vocab(*g);
  const int64_t e = c.n_embd, nv = tiny_family_detail::kVocab;
  g->set_u32("context_length", 1048576);
  g->set_u32("embedding_length", static_cast<uint32_t>(e));
  g->set_u32("block_count", static_cast<uint32_t>(c.n_layer));
  g->set_u32("feed_forward_length", static_cast<uint32_t>(c.n_ff));
  g->set_u32("attention.head_count", 0);
  g->set_u32("wkv.head_size", static_cast<uint32_t>(c.head_size));
  if (c.qwen2) {
    g->set_f32("attention.layer_norm_rms_epsilon", 1e-6f);
    g->set_u32("token_shift_count", 1);
    g->set_u32("attention.head_count_kv", static_cast<uint32_t>(c.n_kv_head));
    g->set_u32("time_mix_extra_dim", static_cast<uint32_t>(c.mix_extra));
    g->set_u32("time_decay_extra_dim", static_cast<uint32_t>(c.decay_extra));
    g->add("token_embd.weight", {e, nv}, 1.0f);
    for (int64_t il = 0; il < c.n_layer; ++il) d::add_rwkv6qwen2_layer(*g, c, il);
    g->add_norm("output_norm.weight", e);
    g->add_linear("output.weight", e, nv);
    g->write();
    return g;
  }
  g->set_f32("attention.layer_norm_epsilon", 1e-5f);
  if (c.version == 7) {
    g->set_u32("attention.decay_lora_rank", static_cast<uint32_t>(c.decay_rank));
    g->set_u32("attention.iclr_lora_rank", static_cast<uint32_t>(c.iclr_rank));
    g->set_u32("attention.value_residual_mix_lora_rank", static_cast<uint32_t>(c.value_rank));
    if (c.gate_rank > 0) g->set_u32("attention.gate_lora_rank", static_cast<uint32_t>(c.gate_rank));
    g->set_u32("token_shift_count", 2);
  } else {
    g->set_u32("time_mix_extra_dim", static_cast<uint32_t>(c.mix_extra));
    g->set_u32("time_decay_extra_dim", static_cast<uint32_t>(c.decay_extra));
    g->set_u32("rescale_every_n_layers", static_cast<uint32_t>(c.rescale_every));
  }
  g->add("token_embd.weight", {e, nv}, 1.0f);
  d::add_ln(*g, "token_embd_norm", e);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    if (c.version == 7) {
      d::add_rwkv7_layer(*g, c, il);
    } else {
      d::add_rwkv6_layer(*g, c, il);
    }
  }
  d::add_ln(*g, "output_norm", e);
  g->add_linear("output.weight", e, nv);
  g->write();
  return g;
}

}  // namespace ferrite::test
