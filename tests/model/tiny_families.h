// Tiny random F32 models of the architecture families checked against
// llama.cpp c392e50, or ik_llama.cpp 8337e4c for the families c392e50 lacks
// (smollm3, glm4, glm4moe, ernie4_5, ernie4_5-moe, hunyuan-moe)
// (tests/model/golden_families_test.cpp, tests/cuda): each
// in the tensor names, shapes and metadata keys llama.cpp's converter writes
// for the family, with a 320-token SentencePiece-style vocabulary (<unk>,
// <s>, </s>, the 256 byte tokens, 61 plain pieces) that llama.cpp loads.
// The weights come from TinyGguf's seeded generator (std::mt19937 and
// std::normal_distribution of libstdc++), so the same file is written on
// every run and on every host; the goldens under tests/model/golden/ hold
// llama.cpp's logits for it (golden_dump; the numbers only).
//
// quirk = false writes the family's distinctive feature neutralised (or the
// same weights under a family without it), for the tests to show that the
// goldens tell it apart: see each family's line in make_tiny_family.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/tiny_gguf.h"

namespace ferrite::test {

// The families, in the order of issue 27.
inline const std::vector<std::string>& tiny_families() {
  static const std::vector<std::string> f = {"olmo2",   "command-r",  "cohere2", "exaone", "internlm2", "minicpm",
                                             "granitemoe", "olmoe", "xverse", "orion",  "baichuan",
                                             "stablelm", "olmo", "nemotron", "plamo", "dbrx"};
  static const std::vector<std::string> all = [] {
    std::vector<std::string> v = f;
    v.push_back("qwen2vl");
    return v;
  }();
  return all;
}

// The families ik_llama.cpp 8337e4c runs and llama.cpp c392e50 does not
// (make_tiny_family writes them too; tests/model/ik_families_test.cpp).
inline const std::vector<std::string>& tiny_ik_families() {
  static const std::vector<std::string> f = {"smollm3", "glm4", "ernie4_5", "ernie4_5-moe", "hunyuan-moe",
                                             "glm4moe"};
  return f;
}

// Whether a family of the two lists has a peer's golden. hunyuan-moe has
// none: ik_llama.cpp 8337e4c norms q and k before RoPE, the published
// definition (transformers' HunYuanMoEV1, which ferrite's converted fixture
// matches within 1.6e-4: tests/convert) after it; on the tiny model the two
// orders are 1.05 apart. ik_families_test.cpp checks it against the
// double-precision reference in the published order.
inline bool tiny_family_has_golden(const std::string& family) { return family != "hunyuan-moe"; }

// The two prompts of every family's goldens (token ids; 1 is <s>).
inline std::vector<int32_t> tiny_family_prompt(int which) {
  std::vector<int32_t> t = {1};
  const int n = which == 1 ? 24 : 17;
  for (int i = 0; i < n - 1; ++i) t.push_back(which == 1 ? (7 * i * i + 3 * i + 5) % 317 + 3 : (11 * i + 40) % 317 + 3);
  return t;
}

namespace tiny_family_detail {

constexpr int64_t kVocab = 320, kEmbd = 64, kHead = 4, kHeadDim = 16, kFf = 96, kCtx = 256;
constexpr int64_t kExperts = 4, kExpertsUsed = 2, kFfExp = 32;

inline void add_vocab(TinyGguf& g) {
  std::vector<gguf::Value> tokens, scores, types;
  auto push = [&](const std::string& text, float score, int32_t type) {
    tokens.push_back(gguf::Value::string(text));
    scores.push_back(gguf::Value::f32(score));
    types.push_back(gguf::Value::i32(type));
  };
  push("<unk>", 0.0f, 2);  // unknown
  push("<s>", 0.0f, 3);    // control
  push("</s>", 0.0f, 3);
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) push(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 0.0f, 6);  // byte
  for (int64_t i = 259; i < kVocab; ++i) push("\u2581w" + std::to_string(i), -static_cast<float>(i), 1);
  gguf::Writer& w = g.writer();
  w.set("tokenizer.ggml.model", gguf::Value::string("llama"));
  w.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::STRING, std::move(tokens)));
  w.set("tokenizer.ggml.scores", gguf::Value::array(gguf::ValueType::FLOAT32, std::move(scores)));
  w.set("tokenizer.ggml.token_type", gguf::Value::array(gguf::ValueType::INT32, std::move(types)));
  w.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(1));
  w.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(2));
  w.set("tokenizer.ggml.unknown_token_id", gguf::Value::u32(0));
}

// What varies between the families' files.
struct Shape {
  int64_t n_layer = 2, n_head_kv = 2;
  int64_t n_rot = kHeadDim;  // rope.dimension_count (stablelm: a quarter of the head)
  bool layer_norm = false;   // attention.layer_norm_epsilon instead of the RMS key
  bool norm_bias = false;    // norms have a .bias (orion)
  bool norm_weights = true;  // norms have a .weight (olmo's have none)
  float embd_offset = 0.0f;  // added to every token embedding
  bool relu_sqr = false;     // feed-forward up (+b), down (+b) without gate (nemotron)
  bool late_gates = false;   // ffn_gate tensors after all the others (the same other weights)
  float out_gain = 1.0f;     // attn_output and ffn_down scaled by this: a deep model's blocks
                             // perturb the residual less (baichuan's 32 layers stay within 1e-3)
  bool pre_norms = true;     // attn_norm / ffn_norm (olmo2 has post-norms instead)
  bool ffn_norm = true;      // a separate ffn_norm (command-r's blocks share attn_norm)
  bool post_norms = false;   // post_attention_norm / post_ffw_norm (olmo2)
  int qk_norm = 0;           // 0: none; 1: per head [head_dim]; 2: whole projection [n_q], [n_kv]
  bool experts = false;      // every layer's feed-forward is experts
  int64_t n_expert = kExperts;
  bool output = true;        // an output.weight (else tied to token_embd)
  bool attn_bias = false;    // attn_q/k/v/output .bias (phimoe)
  bool output_bias = false;  // output.bias (phimoe)
  bool fused_qkv = false;    // attn_qkv [n_embd, n_q + 2 n_kv] instead of attn_q/k/v (dbrx)
  bool rope_dims_key = true; // rope.dimension_count written (dbrx's converter writes none)
  std::string ffn_norm_name = "ffn_norm";  // dbrx: attn_output_norm
  bool qkv_bias = false;     // attn_q/k/v.bias (qwen2vl)
  bool fused_up = false;     // ffn_up [n_embd, 2 n_ff] holds gate | up, no ffn_gate (glm4)
  int64_t dense_lead = 0;    // with experts: the first layers are dense (ernie4_5-moe)
  bool shexp = false;        // with experts: a shared expert ffn_{gate,up,down}_shexp of kFfExp
  bool probs_bias = false;   // with experts: exp_probs_b.bias, the selection bias (ernie4_5-moe)
};

inline void add_layers(TinyGguf& g, const Shape& s) {
  const int64_t n_q = kHead * kHeadDim, n_kv = s.n_head_kv * kHeadDim;
  g.set_u32("context_length", kCtx);
  g.set_u32("embedding_length", kEmbd);
  g.set_u32("block_count", static_cast<uint32_t>(s.n_layer));
  g.set_u32("feed_forward_length", s.experts ? kFfExp : kFf);
  g.set_u32("attention.head_count", kHead);
  g.set_u32("attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  g.set_f32(s.layer_norm ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon", 1e-5f);
  if (s.rope_dims_key) g.set_u32("rope.dimension_count", static_cast<uint32_t>(s.n_rot));
  g.set_f32("rope.freq_base", 10000.0f);
  if (s.experts) {
    g.set_u32("expert_count", static_cast<uint32_t>(s.n_expert));
    g.set_u32("expert_used_count", kExpertsUsed);
    if (s.dense_lead > 0) {
      // The dense layers' and the experts' sizes apart (ik_llama.cpp's keys).
      g.set_u32("feed_forward_length", kFf);
    }
    // ernie4_5-moe sizes experts by this key; hunyuan-moe by feed_forward_length (ik_llama.cpp 8337e4c).
    if (s.dense_lead > 0 || s.shexp) g.set_u32("expert_feed_forward_length", kFfExp);
    if (s.shexp) g.set_u32("expert_shared_feed_forward_length", kFfExp);
  }
  // A tied output table of unit rows would make logits of 50 and more, where
  // f16 rounding flips move them past 1e-3: 1/sqrt(n_embd) keeps them near 5.
  const float embd_std = s.output ? 1.0f : 0.125f;
  g.add("token_embd.weight", {kEmbd, kVocab}, embd_std, s.embd_offset);
  if (s.norm_weights) g.add_norm("output_norm.weight", kEmbd);
  if (s.norm_bias) g.add("output_norm.bias", {kEmbd}, 0.1f);
  if (s.output) g.add_linear("output.weight", kEmbd, kVocab);
  if (s.output_bias) g.add("output.bias", {kVocab}, 0.1f);
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    if (s.pre_norms && s.norm_weights) g.add_norm(p + "attn_norm.weight", kEmbd);
    if (s.pre_norms && s.norm_bias) g.add(p + "attn_norm.bias", {kEmbd}, 0.1f);
    if (s.fused_qkv) {
      g.add_linear(p + "attn_qkv.weight", kEmbd, n_q + 2 * n_kv);
    } else {
      g.add_linear(p + "attn_q.weight", kEmbd, n_q);
      g.add_linear(p + "attn_k.weight", kEmbd, n_kv);
      g.add_linear(p + "attn_v.weight", kEmbd, n_kv);
    }
    if (s.attn_bias) {
      g.add(p + "attn_q.bias", {n_q}, 0.1f);
      g.add(p + "attn_k.bias", {n_kv}, 0.1f);
      g.add(p + "attn_v.bias", {n_kv}, 0.1f);
    }
    if (s.qkv_bias) {
      g.add(p + "attn_q.bias", {n_q}, 0.2f);
      g.add(p + "attn_k.bias", {n_kv}, 0.2f);
      g.add(p + "attn_v.bias", {n_kv}, 0.2f);
    }
    g.add(p + "attn_output.weight", {n_q, kEmbd}, s.out_gain / std::sqrt(static_cast<float>(n_q)));
    if (s.attn_bias) g.add(p + "attn_output.bias", {kEmbd}, 0.1f);
    if (s.qk_norm != 0) {
      g.add_norm(p + "attn_q_norm.weight", s.qk_norm == 2 ? n_q : kHeadDim);
      g.add_norm(p + "attn_k_norm.weight", s.qk_norm == 2 ? n_kv : kHeadDim);
    }
    if (s.post_norms) g.add_norm(p + "post_attention_norm.weight", kEmbd);
    if (s.pre_norms && s.ffn_norm && s.norm_weights) g.add_norm(p + s.ffn_norm_name + ".weight", kEmbd);
    if (s.pre_norms && s.ffn_norm && s.norm_bias) g.add(p + s.ffn_norm_name + ".bias", {kEmbd}, 0.1f);
    if (s.experts && il >= s.dense_lead) {
      g.add_linear(p + "ffn_gate_inp.weight", kEmbd, s.n_expert);
      if (s.probs_bias) g.add(p + "exp_probs_b.bias", {s.n_expert}, 0.3f);
      g.add(p + "ffn_gate_exps.weight", {kEmbd, kFfExp, s.n_expert}, 0.125f);
      g.add(p + "ffn_up_exps.weight", {kEmbd, kFfExp, s.n_expert}, 0.125f);
      g.add(p + "ffn_down_exps.weight", {kFfExp, kEmbd, s.n_expert}, 0.18f);
      if (s.shexp) {
        g.add_linear(p + "ffn_gate_shexp.weight", kEmbd, kFfExp);
        g.add_linear(p + "ffn_up_shexp.weight", kEmbd, kFfExp);
        g.add_linear(p + "ffn_down_shexp.weight", kFfExp, kEmbd);
      }
    } else if (s.fused_up) {
      g.add_linear(p + "ffn_up.weight", kEmbd, 2 * kFf);
      g.add_linear(p + "ffn_down.weight", kFf, kEmbd);
    } else if (s.relu_sqr) {
      g.add_linear(p + "ffn_up.weight", kEmbd, kFf);
      g.add(p + "ffn_up.bias", {kFf}, 0.1f);
      g.add_linear(p + "ffn_down.weight", kFf, kEmbd);
      g.add(p + "ffn_down.bias", {kEmbd}, 0.1f);
    } else {
      g.add_linear(p + "ffn_gate.weight", kEmbd, kFf);
      g.add_linear(p + "ffn_up.weight", kEmbd, kFf);
      g.add(p + "ffn_down.weight", {kFf, kEmbd}, s.out_gain / std::sqrt(static_cast<float>(kFf)));
    }
    if (s.post_norms) g.add_norm(p + "post_ffw_norm.weight", kEmbd);
  }
  for (int64_t il = 0; s.late_gates && il < s.n_layer; ++il) {
    g.add_linear("blk." + std::to_string(il) + ".ffn_gate.weight", kEmbd, kFf);
  }
}

}  // namespace tiny_family_detail

// Writes the tiny model of `family` (one of tiny_families() or tiny_ik_families()).
inline std::unique_ptr<TinyGguf> make_tiny_family(const std::string& family, bool quirk = true,
                                                   float phimoe_jitter = 0.0f) {
  namespace d = tiny_family_detail;
  d::Shape s;
  std::string arch = family;
  float swa = 0.0f, logit_scale = 0.0f, embd_scale = 0.0f, residual_scale = 0.0f, attn_scale = 0.0f;
  float clamp_kqv = 0.0f;
  bool softmax_gating = false;  // glm4moe without its quirk
  bool longrope = false, zero_norm_biases = false, zero_probs_bias = false, zero_shexp = false;
  if (family == "olmo2") {
    // Quirk: q/k norms over the whole projection (off: per head). MHA: c392e50 wants k_norm [n_embd].
    s.n_head_kv = d::kHead;
    s.pre_norms = false;
    s.post_norms = true;
    s.qk_norm = quirk ? 2 : 1;
  } else if (family == "command-r" || family == "cohere2") {
    // Quirk: logit_scale (off: 1); cohere2 also its window of 5 (off: 4096, never reached).
    s.layer_norm = true;
    s.ffn_norm = false;
    s.output = false;
    logit_scale = quirk ? 0.5f : 1.0f;
    if (family == "cohere2") {
      s.n_layer = 4;  // layers 0-2 slide with RoPE, layer 3 is global without
      swa = quirk ? 5.0f : 4096.0f;
      logit_scale = 0.5f;
    }
  } else if (family == "exaone" || family == "internlm2") {
    // Quirk: the RoPE pairing (off: the same file as the family with the other one).
    if (!quirk) arch = family == "exaone" ? "internlm2" : "exaone";
  } else if (family == "minicpm" || family == "granitemoe") {
    // Quirk: the multipliers (off: 1; granitemoe's attention.scale, which llama.cpp requires there:
    // 1/sqrt(head_dim)).
    s.experts = family == "granitemoe";
    if (s.experts) attn_scale = quirk ? 0.2f : 0.25f;
    s.output = family != "minicpm";
    embd_scale = quirk ? 3.0f : 1.0f;
    residual_scale = quirk ? 0.4f : 1.0f;
    logit_scale = quirk ? 2.5f : 1.0f;
  } else if (family == "olmoe") {
    // Quirk: q/k norms over the whole projection (off: per head).
    s.n_head_kv = d::kHead;
    s.experts = true;
    s.qk_norm = quirk ? 2 : 1;
  } else if (family == "xverse" || family == "baichuan") {
    // Llama's layout; quirk: none beyond the RoPE pairing (off: the same file as exaone, NeoX pairs).
    // llama.cpp c392e50 runs baichuan only as 7B (32 layers) or 13B (40, ALiBi).
    if (family == "baichuan") {
      s.n_layer = 32;
      s.out_gain = 0.4f;
    }
    if (!quirk) arch = "exaone";
  } else if (family == "orion") {
    // Quirk: LayerNorms with biases (off: the same file as xverse, RMSNorms without).
    s.layer_norm = true;
    s.norm_bias = true;
    if (!quirk) arch = "xverse";
  } else if (family == "stablelm") {
    // Quirk: partial RoPE, 4 of 16 dimensions (off: all 16).
    s.layer_norm = true;
    s.norm_bias = true;
    s.n_rot = quirk ? 4 : d::kHeadDim;
  } else if (family == "olmo") {
    // Quirk: non-parametric LayerNorms. No family loads the file without them, so "off" adds 0.75 to
    // every embedding: only a mean-free norm ignores that (the constant rides the residual stream and
    // every LayerNorm removes it), so the shifted file must still meet the golden.
    s.layer_norm = true;
    s.embd_offset = quirk ? 0.0f : 0.75f;
    s.norm_weights = false;
  } else if (family == "nemotron") {
    // Quirk: the squared-ReLU feed-forward (off: the same weights plus gates as stablelm, SwiGLU).
    s.layer_norm = true;
    s.norm_bias = true;
    s.n_rot = 8;
    s.relu_sqr = true;
    if (!quirk) {
      arch = "stablelm";
      s.late_gates = true;
    }
  } else if (family == "plamo") {
    // Parallel blocks under one RMSNorm; quirk: RMSNorm (off: the same file as command-r, LayerNorms).
    s.ffn_norm = false;
    if (!quirk) arch = "command-r";
  } else if (family == "phimoe") {
    // Phi-3.5-MoE in llama.cpp's layout: norms with biases, Q/K/V/O and output biases, 16 experts
    // of which 2 are used, LongRoPE's factors (the short ones at these contexts) with the
    // converter's attn_factor, and a sliding_window of 6. Not among tiny_families(): llama.cpp
    // c392e50's phimoe is not the published one (tests/model/phimoe_test.cpp checks this file
    // against a reference of transformers' definition, ref_phimoe.h). Quirk: the norms' biases
    // (off: zero, the same other weights). phimoe_jitter != 0: phimoe.router_jitter_noise.
    s.norm_bias = true;
    s.attn_bias = true;
    s.output_bias = true;
    s.experts = true;
    s.n_expert = 16;
    swa = 6.0f;
    longrope = true;
    zero_norm_biases = !quirk;
  } else if (family == "dbrx") {
    // LayerNorms with weights only, fused Q|K|V, experts under blk.N.attn_output_norm, no
    // rope.dimension_count key (the whole head rotates). Quirk: Q|K|V clipped to [-0.6, 0.6]
    // (the file's attention.clamp_kqv; off: 1e4, never reached).
    s.layer_norm = true;
    s.fused_qkv = true;
    s.rope_dims_key = false;
    s.ffn_norm_name = "attn_output_norm";
    s.experts = true;
    clamp_kqv = quirk ? 0.6f : 1e4f;
  } else if (family == "qwen2vl") {
    // qwen2's layout with Q/K/V biases and M-RoPE sections (2 + 3 + 3 + 0 of the head's 8 pairs), which
    // for text positions rotate as NeoX RoPE (arch_qwen2vl.cpp); quirk: the NeoX pairing (off: the same
    // file as llama, adjacent pairs).
    s.qkv_bias = true;
    if (!quirk) arch = "llama";
  } else if (family == "smollm3") {
    // ik_llama.cpp's families (tests/model/golden/ from ik_llama.cpp 8337e4c). Llama's layout in 4
    // layers, the 4th without RoPE; quirk: that NoPE layer (off: the same file as llama, RoPE everywhere).
    s.n_layer = 4;
    if (!quirk) arch = "llama";
  } else if (family == "glm4") {
    // Pre- and post-norms, Q/K/V biases, fused gate|up; quirk: partial RoPE, 8 of 16 dimensions (off: 16).
    s.post_norms = true;
    s.qkv_bias = true;
    s.fused_up = true;
    s.output = false;
    s.n_rot = quirk ? 8 : d::kHeadDim;
  } else if (family == "ernie4_5") {
    // Llama's layout; quirk: none beyond the RoPE pairing (off: the same file as qwen2, NeoX pairs).
    if (!quirk) arch = "qwen2";
  } else if (family == "ernie4_5-moe") {
    // 3 layers: 1 dense, then experts with a selection bias and a shared expert; quirk: the selection
    // bias (off: zero).
    s.n_layer = 3;
    s.experts = true;
    s.dense_lead = 1;
    s.shexp = true;
    s.probs_bias = true;
    zero_probs_bias = !quirk;
  } else if (family == "hunyuan-moe") {
    // Experts in every layer plus an ungated shared expert, per-head q/k norms, NeoX RoPE; quirk: the
    // shared expert (off: its down projection zero).
    s.experts = true;
    s.shexp = true;
    s.qk_norm = 1;
    zero_shexp = !quirk;
  } else if (family == "glm4moe") {
    // 3 layers: 1 dense, then experts chosen by sigmoid scores plus a selection bias, weights
    // renormalised and scaled by 2.5, and a shared expert; Q/K/V biases, per-head q/k norms, NeoX
    // RoPE over 8 of 16 dimensions; the feed-forward's norm is named post_attention_norm. Quirk: the
    // sigmoid gating (off: the same file with expert_gating_func 1, softmax).
    s.n_layer = 3;
    s.experts = true;
    s.dense_lead = 1;
    s.shexp = true;
    s.probs_bias = true;
    s.qkv_bias = true;
    s.qk_norm = 1;
    s.n_rot = 8;
    s.ffn_norm_name = "post_attention_norm";
    softmax_gating = !quirk;
  } else {
    throw std::invalid_argument("no tiny model of family " + family);
  }
  // Seeds follow the family's place in the list, except those appended after
  // the list in tiny_families() (qwen2vl) and ik_llama.cpp's families, which
  // name their own so that neither they nor a family added to the list on a
  // parallel branch change file. phimoe and dbrx keep the seeds of their
  // places 15 and 16 from before phimoe left the list.
  uint32_t seed = 20270;
  static const std::vector<std::pair<std::string, uint32_t>> own_seeds = {
      {"phimoe", 20270 + 7 * 15}, {"dbrx", 20270 + 7 * 16}, {"qwen2vl", 31001}, {"smollm3", 32001}, {"glm4", 32011}, {"ernie4_5", 32021}, {"ernie4_5-moe", 32031},
      {"hunyuan-moe", 32041}, {"glm4moe", 32051}};
  const auto own = std::find_if(own_seeds.begin(), own_seeds.end(), [&](const auto& e) { return e.first == family; });
  if (own != own_seeds.end()) {
    seed = own->second;
  } else {
    for (size_t i = 0; i < tiny_families().size(); ++i) {
      if (tiny_families()[i] == family) seed += static_cast<uint32_t>(7 * i);
    }
  }
  auto g = std::make_unique<TinyGguf>(arch, seed);
  d::add_vocab(*g);
  d::add_layers(*g, s);
  if (swa > 0.0f) g->set_u32("attention.sliding_window", static_cast<uint32_t>(swa));
  if (logit_scale > 0.0f) g->set_f32("logit_scale", logit_scale);
  if (embd_scale > 0.0f) g->set_f32("embedding_scale", embd_scale);
  if (residual_scale > 0.0f) g->set_f32("residual_scale", residual_scale);
  if (attn_scale > 0.0f) g->set_f32("attention.scale", attn_scale);
  if (clamp_kqv > 0.0f) g->set_f32("attention.clamp_kqv", clamp_kqv);
  if (phimoe_jitter != 0.0f) g->set_f32("router_jitter_noise", phimoe_jitter);  // NaN too
  if (longrope) {
    // Phi-3.5's LongRoPE keys: the original context, the magnitude factor, both factor tables.
    g->set_u32("rope.scaling.original_context_length", 4096);
    g->set_f32("rope.scaling.attn_factor", 1.19f);
    g->add("rope_factors_long.weight", {d::kHeadDim / 2}, 1.0f, 8.0f);
    g->add("rope_factors_short.weight", {d::kHeadDim / 2}, 0.05f, 1.05f);
  }
  if (zero_norm_biases) {
    std::vector<std::string> biases = {"output_norm.bias"};
    for (int64_t il = 0; il < s.n_layer; ++il) {
      biases.push_back("blk." + std::to_string(il) + ".attn_norm.bias");
      biases.push_back("blk." + std::to_string(il) + ".ffn_norm.bias");
    }
    for (const std::string& b : biases) std::fill(g->values(b).begin(), g->values(b).end(), 0.0f);
  }
  for (int64_t il = s.dense_lead; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    if (zero_probs_bias) std::fill(g->values(p + "exp_probs_b.bias").begin(), g->values(p + "exp_probs_b.bias").end(), 0.0f);
    if (zero_shexp) std::fill(g->values(p + "ffn_down_shexp.weight").begin(), g->values(p + "ffn_down_shexp.weight").end(), 0.0f);
  }
  if (family == "ernie4_5-moe") {
    g->set_u32("leading_dense_block_count", static_cast<uint32_t>(s.dense_lead));
    g->set_u32("interleave_moe_layer_step", 1);
  }
  if (family == "glm4moe") {
    g->set_u32("leading_dense_block_count", static_cast<uint32_t>(s.dense_lead));
    g->set_u32("expert_shared_count", 1);
    g->set_u32("expert_gating_func", softmax_gating ? 1 : 2);
    g->set_f32("expert_weights_scale", 2.5f);
    g->writer().set("glm4moe.expert_weights_norm", gguf::Value::boolean(true));
  }
  if (family == "qwen2vl") {
    std::vector<gguf::Value> sections;
    for (uint32_t v : {2u, 3u, 3u, 0u}) sections.push_back(gguf::Value::i32(static_cast<int32_t>(v)));
    g->writer().set(arch + ".rope.dimension_sections", gguf::Value::array(gguf::ValueType::INT32, std::move(sections)));
  }
  g->write();
  return g;
}

// The embedding families (encoders: tests compare hidden states and the
// pooled embedding, tests/model/golden_families_test.cpp GoldenEmbeddingFamilies).
inline const std::vector<std::string>& tiny_embedding_families() {
  static const std::vector<std::string> f = {"nomic-bert", "jina-bert-v2"};
  return f;
}

// Writes the tiny encoder of `family` (one of tiny_embedding_families()) in
// llama.cpp's layout: mean pooling, 2 layers, no position table (nomic-bert:
// RoPE with freq_base 1000, fused attn_qkv, SwiGLU, no biases; jina-bert-v2:
// ALiBi, q/k/v/output/down biases, GEGLU, and attn_norm_2 in layer 1 only, so
// that both of its block forms are checked). The distinctive positions are
// neutralised by evaluating with every position equal (the tests), not by
// another file.
inline std::unique_ptr<TinyGguf> make_tiny_embedding_family(const std::string& family) {
  namespace d = tiny_family_detail;
  const bool nomic = family == "nomic-bert";
  if (!nomic && family != "jina-bert-v2") throw std::invalid_argument("no tiny encoder of family " + family);
  auto g = std::make_unique<TinyGguf>(family, nomic ? 31101u : 31201u);
  d::add_vocab(*g);
  g->writer().set("tokenizer.ggml.token_type_count", gguf::Value::u32(2));  // llama.cpp's token_types rows
  g->set_u32("context_length", d::kCtx);
  g->set_u32("embedding_length", d::kEmbd);
  g->set_u32("block_count", 2);
  g->set_u32("feed_forward_length", d::kFf);
  g->set_u32("attention.head_count", d::kHead);
  g->set_f32("attention.layer_norm_epsilon", 1e-12f);
  g->writer().set(family + ".attention.causal", gguf::Value::boolean(false));
  g->set_u32("pooling_type", 1);  // mean
  if (nomic) g->set_f32("rope.freq_base", 1000.0f);
  const int64_t e = d::kEmbd, ff = d::kFf;
  auto norm = [&](const std::string& name) {
    g->add_norm(name + ".weight", e);
    g->add(name + ".bias", {e}, 0.1f);
  };
  g->add("token_embd.weight", {e, d::kVocab}, 1.0f);
  g->add("token_types.weight", {e, 2}, 0.5f);
  norm("token_embd_norm");
  for (int il = 0; il < 2; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    if (nomic) {
      // Scores of order 3 (q, k of order 2): attention that is neither uniform nor one-hot.
      g->add(p + "attn_qkv.weight", {e, 3 * e}, 2.0f / std::sqrt(static_cast<float>(e)));
    } else {
      for (const char* m : {"attn_q", "attn_k", "attn_v"}) {
        g->add(p + m + ".weight", {e, e}, 2.0f / std::sqrt(static_cast<float>(e)));
        g->add(p + m + ".bias", {e}, 0.2f);
      }
    }
    g->add_linear(p + "attn_output.weight", e, e);
    if (!nomic) g->add(p + "attn_output.bias", {e}, 0.1f);
    norm(p + "attn_output_norm");
    if (!nomic && il == 1) norm(p + "attn_norm_2");
    g->add_linear(p + "ffn_up.weight", e, ff);
    g->add_linear(p + "ffn_gate.weight", e, ff);
    g->add_linear(p + "ffn_down.weight", ff, e);
    if (!nomic) g->add(p + "ffn_down.bias", {e}, 0.1f);
    norm(p + "layer_output_norm");
  }
  g->write();
  return g;
}

}  // namespace ferrite::test
