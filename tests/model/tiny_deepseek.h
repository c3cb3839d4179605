// Tiny random deepseek (V1) and deepseek2 (multi-head latent attention)
// models in llama.cpp's tensor layout and metadata keys (c392e50's
// converter), with the first tokens of the llama SPM vocabulary so that
// llama.cpp loads them too (tests/model/golden/deepseek*.json are its logits
// of these very files; deepseek_test.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "model/tiny_gguf.h"
#include "model/tiny_vocab.h"
#include "support/test_data.h"

namespace ferrite::test {

struct DeepseekShape {
  bool mla = false;            // deepseek2
  int64_t n_vocab = 512, n_embd = 64, n_layer = 3, n_dense = 1;
  int64_t n_head = 4, head_dim = 16;  // V1's heads
  int64_t n_ff = 96, n_expert = 4, n_expert_used = 2, n_ff_exp = 32, n_shared = 2;
  // deepseek2: q_lora_rank 0 (V2-Lite: one Q projection; llama.cpp c392e50
  // takes that form only for 27 layers), latent rank and head dims.
  int64_t q_lora_rank = 48, kv_lora_rank = 32, qk_nope = 16, qk_rope = 16, v_head = 24;
  float weights_scale = 1.0f;
  bool weights_norm = false;
  uint32_t gating = 1;         // 1 softmax, 2 sigmoid (V3)
  bool probs_bias = false;     // V3's exp_probs_b
  float yarn_factor = 0.0f;    // 0: no scaling
  uint32_t yarn_orig_ctx = 32;
  float yarn_log_mul = 0.0f;
  uint32_t seed = 1;
};

// Writes the model; the vocabulary comes from shared/vocab (the caller
// checks it exists). edit (optional) changes values before the write.
inline std::unique_ptr<TinyGguf> make_tiny_deepseek(const DeepseekShape& s,
                                                     const std::function<void(TinyGguf&)>& edit = {}) {
  const std::string arch = s.mla ? "deepseek2" : "deepseek";
  auto g = std::make_unique<TinyGguf>(arch, s.seed);
  TinyGguf& m = *g;
  add_vocab_prefix(m.writer(), shared_path("vocab/ggml-vocab-llama-spm.gguf"), s.n_vocab);
  const int64_t d = s.n_embd;
  const int64_t hd_k = s.mla ? s.qk_nope + s.qk_rope : s.head_dim;
  const int64_t hd_v = s.mla ? s.v_head : s.head_dim;
  m.set_u32("context_length", 256);
  m.set_u32("embedding_length", static_cast<uint32_t>(d));
  m.set_u32("block_count", static_cast<uint32_t>(s.n_layer));
  m.set_u32("feed_forward_length", static_cast<uint32_t>(s.n_ff));
  m.set_u32("attention.head_count", static_cast<uint32_t>(s.n_head));
  m.set_u32("attention.head_count_kv", static_cast<uint32_t>(s.n_head));
  m.set_u32("rope.dimension_count", static_cast<uint32_t>(s.mla ? s.qk_rope : s.head_dim));
  m.set_f32("rope.freq_base", 10000.0f);
  m.set_f32("attention.layer_norm_rms_epsilon", 1e-6f);
  m.set_u32("expert_count", static_cast<uint32_t>(s.n_expert));
  m.set_u32("expert_used_count", static_cast<uint32_t>(s.n_expert_used));
  m.set_u32("leading_dense_block_count", static_cast<uint32_t>(s.n_dense));
  m.set_u32("expert_feed_forward_length", static_cast<uint32_t>(s.n_ff_exp));
  m.set_u32("expert_shared_count", static_cast<uint32_t>(s.n_shared));
  m.set_f32("expert_weights_scale", s.weights_scale);
  if (s.mla) {
    if (s.q_lora_rank > 0) m.set_u32("attention.q_lora_rank", static_cast<uint32_t>(s.q_lora_rank));
    m.set_u32("attention.kv_lora_rank", static_cast<uint32_t>(s.kv_lora_rank));
    m.set_u32("attention.key_length", static_cast<uint32_t>(hd_k));
    m.set_u32("attention.value_length", static_cast<uint32_t>(hd_v));
    m.writer().set("deepseek2.expert_weights_norm", gguf::Value::boolean(s.weights_norm));
    m.set_u32("expert_gating_func", s.gating);
    m.set_f32("rope.scaling.yarn_log_multiplier", s.yarn_log_mul);
    if (s.yarn_factor > 0.0f) {
      m.set_str("rope.scaling.type", "yarn");
      m.set_f32("rope.scaling.factor", s.yarn_factor);
      m.set_u32("rope.scaling.original_context_length", s.yarn_orig_ctx);
    }
  }
  m.add("token_embd.weight", {d, s.n_vocab}, 1.0f);
  m.add_norm("output_norm.weight", d);
  m.add_linear("output.weight", d, s.n_vocab);
  for (int64_t il = 0; il < s.n_layer; ++il) {
    auto name = [il](const char* t) { return "blk." + std::to_string(il) + "." + t; };
    m.add_norm(name("attn_norm.weight"), d);
    if (s.mla) {
      if (s.q_lora_rank > 0) {
        m.add_linear(name("attn_q_a.weight"), d, s.q_lora_rank);
        m.add_norm(name("attn_q_a_norm.weight"), s.q_lora_rank);
        m.add_linear(name("attn_q_b.weight"), s.q_lora_rank, s.n_head * hd_k);
      } else {
        m.add_linear(name("attn_q.weight"), d, s.n_head * hd_k);
      }
      m.add_linear(name("attn_kv_a_mqa.weight"), d, s.kv_lora_rank + s.qk_rope);
      m.add_norm(name("attn_kv_a_norm.weight"), s.kv_lora_rank);
      m.add_linear(name("attn_kv_b.weight"), s.kv_lora_rank, s.n_head * (s.qk_nope + hd_v));
      m.add_linear(name("attn_output.weight"), s.n_head * hd_v, d);
    } else {
      m.add_linear(name("attn_q.weight"), d, s.n_head * hd_k);
      m.add_linear(name("attn_k.weight"), d, s.n_head * hd_k);
      m.add_linear(name("attn_v.weight"), d, s.n_head * hd_v);
      m.add_linear(name("attn_output.weight"), s.n_head * hd_v, d);
    }
    m.add_norm(name("ffn_norm.weight"), d);
    if (il < s.n_dense) {
      m.add_linear(name("ffn_gate.weight"), d, s.n_ff);
      m.add_linear(name("ffn_up.weight"), d, s.n_ff);
      m.add_linear(name("ffn_down.weight"), s.n_ff, d);
      continue;
    }
    m.add_linear(name("ffn_gate_inp.weight"), d, s.n_expert);
    if (s.probs_bias) m.add(name("exp_probs_b.bias"), {s.n_expert}, 0.3f);
    const float sd_in = 1.0f / std::sqrt(static_cast<float>(d));
    const float sd_ff = 1.0f / std::sqrt(static_cast<float>(s.n_ff_exp));
    m.add(name("ffn_gate_exps.weight"), {d, s.n_ff_exp, s.n_expert}, sd_in);
    m.add(name("ffn_down_exps.weight"), {s.n_ff_exp, d, s.n_expert}, sd_ff);
    m.add(name("ffn_up_exps.weight"), {d, s.n_ff_exp, s.n_expert}, sd_in);
    const int64_t n_sh = s.n_ff_exp * s.n_shared;
    m.add_linear(name("ffn_gate_shexp.weight"), d, n_sh);
    m.add_linear(name("ffn_down_shexp.weight"), n_sh, d);
    m.add_linear(name("ffn_up_shexp.weight"), d, n_sh);
  }
  if (edit) edit(m);
  m.write();
  return g;
}

// F32 weights: the goldens' tolerance (golden_archs_test.cpp) for deepseek,
// which rounds as llama.cpp does.
inline constexpr double kDeepseekTolerance = 1e-3;
// deepseek2 rounds elsewhere: ferrite caches the f16 latent and rounds the
// absorbed queries (W_UK^T q) to f16, llama.cpp caches f16 full keys W_UK c
// and values W_UV c. Both then sit at the f16 floor, not on each other: from
// the double-precision reference (ref_deepseek2.h, DeepseekReference)
// llama.cpp is 1.1e-3..1.6e-3 away on the 3-layer models and 3.2e-3..4.5e-3
// on the 27-layer one, ferrite 1.8e-3..2.5e-3 and 3.2e-3..5.6e-3; ferrite
// against llama.cpp: up to 2.0e-3 and 5.2e-3. Bounds: twice llama.cpp's own
// floor. A wrong definition (router, bias, YaRN scale) moves them by > 5e-2.
inline constexpr double kMlaTolerance = 4e-3;
inline constexpr double kMlaDeepTolerance = 1e-2;

// The bound of a model's logits against its golden (CPU, and the GPU's exact mode).
inline double deepseek_tolerance(const DeepseekShape& s) {
  if (!s.mla) return kDeepseekTolerance;
  return s.n_layer > 8 ? kMlaDeepTolerance : kMlaTolerance;
}

// The models with goldens (tests/model/golden/<name>.p1.json, .p2.json):
// llama.cpp c392e50's logits of the two prompts below.
struct DeepseekCase {
  const char* name;
  DeepseekShape shape;
};

inline void PrintTo(const DeepseekCase& c, std::ostream* os) { *os << c.name; }

inline const std::vector<DeepseekCase>& deepseek_cases() {
  static const std::vector<DeepseekCase> c = [] {
    std::vector<DeepseekCase> v;
    v.push_back({"deepseek", DeepseekShape{}});  // V1: 1 dense + 2 expert layers, 2 shared experts
    // V2: q_lora_rank 48, kv_lora_rank 32, rope 16, softmax routing scaled by 2.
    DeepseekShape v2;
    v2.mla = true;
    v2.weights_scale = 2.0f;
    v2.seed = 2;
    v.push_back({"deepseek2", v2});
    // V3: sigmoid routing with the selection bias, renormalised and scaled,
    // 8 experts, kv_lora_rank 64, rope 32, YaRN (factor 4 from 16 positions,
    // yarn_log_multiplier 0.1: mscale into the score scale).
    DeepseekShape v3 = v2;
    v3.q_lora_rank = 64;
    v3.kv_lora_rank = 64;
    v3.qk_rope = 32;
    v3.n_expert = 8;
    v3.n_shared = 1;
    v3.gating = 2;
    v3.probs_bias = true;
    v3.weights_norm = true;
    v3.weights_scale = 2.5f;
    v3.yarn_factor = 4.0f;
    v3.yarn_orig_ctx = 16;
    v3.yarn_log_mul = 0.1f;
    v3.seed = 3;
    v.push_back({"deepseek2-v3", v3});
    // V2-Lite: no q_lora_rank (one attn_q); llama.cpp c392e50 takes that
    // form only for 27 layers, hence the depth; narrow to stay small, and
    // dense (the cases above cover the experts; over 26 expert layers of
    // this width ferrite missed llama.cpp by 0.28 on p1 while 3-, 6- and
    // 12-layer expert models agree: not understood yet, see deepseek_test.cpp).
    DeepseekShape lite = v2;
    lite.q_lora_rank = 0;
    lite.n_layer = 27;
    lite.n_dense = 27;
    lite.n_embd = 32;
    lite.n_ff = 48;
    lite.n_ff_exp = 16;
    lite.seed = 4;
    v.push_back({"deepseek2-lite", lite});
    return v;
  }();
  return c;
}

// A golden of the repository (tests/model/golden/<name>.p<p>.json): under
// the source tree the build names, else beside the build folder holding
// this binary, else under the working folder (a copy of the tree elsewhere:
// the GPU machine).
inline std::filesystem::path deepseek_golden(const std::string& name, int p) {
  const std::filesystem::path rel = std::filesystem::path("tests/model/golden") / (name + ".p" + std::to_string(p) + ".json");
  std::vector<std::filesystem::path> roots = {FERRITE_SOURCE_DIR, std::filesystem::current_path()};
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) roots.insert(roots.begin() + 1, exe.parent_path().parent_path().parent_path());
  for (const auto& r : roots) {
    if (std::filesystem::exists(r / rel)) return r / rel;
  }
  return roots.front() / rel;
}

// The goldens' prompts (token ids, no BOS): 20 and 36 tokens.
inline std::vector<int32_t> deepseek_prompt(int p) {
  std::vector<int32_t> t;
  const int n = p == 1 ? 20 : 36;
  for (int i = 0; i < n; ++i) {
    t.push_back(p == 1 ? (7 * i * i + 3 * i + 11) % 509 + 3 : (13 * i * i + 5 * i + 29) % 509 + 3);
  }
  return t;
}

}  // namespace ferrite::test
