// Tensor rules of the Hugging Face Llama-style decoders (model.embed_tokens,
// model.layers.N.self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj, ...),
// shared by the llama, qwen and gemma families with their variations.
#pragma once

#include <vector>

#include "convert/arch.h"

namespace ferrite::convert {

enum class MoeLayout {
  None,
  Mixtral,        // block_sparse_moe.gate, block_sparse_moe.experts.N.w1/w2/w3
  Qwen,           // mlp.gate, mlp.experts.N.{gate,up,down}_proj
  QwenShared,     // the same plus mlp.shared_expert.* and mlp.shared_expert_gate
};

// DeepSeek-style experts (deepseek2, glm4moe): mlp.gate (+ its
// e_score_correction_bias, the selection bias), mlp.experts.N.{gate,up,down}_proj
// and mlp.shared_experts.*.
std::vector<TensorRule> deepseek_moe_rules();

struct DecoderRuleOptions {
  bool permute_qk = false;   // llama: Q/K rows reordered for adjacent-pair RoPE
  bool qk_norm = false;      // qwen3, gemma3: self_attn.q_norm / k_norm
  bool gemma = false;        // RMSNorm weights + 1, no lm_head
  bool post_norms = false;   // gemma2/3: post-attention and pre/post-feedforward norms
  MoeLayout moe = MoeLayout::None;
};

std::vector<TensorRule> decoder_rules(const DecoderRuleOptions& o);

// Per-layer requirements of such a decoder (attention, norms, a feed-forward
// or its experts).
std::vector<std::vector<const char*>> decoder_layer_requires(const DecoderRuleOptions& o);

}  // namespace ferrite::convert
