// Scratch memory of the CPU backend's forward passes, reused from step to
// step (grown on demand, never shrunk) so decoding allocates nothing once warm.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/matmul_observer.h"
#include "backend/ops.h"
#include "cpu/attention/attention.h"
#include "cpu/matmul.h"

namespace ferrite::cpu {

struct Workspace {
  // The model's named activations (backend::Buf), row-major [rows, cols].
  std::vector<float> bufs[backend::kBufCount];
  // Inside the operations.
  std::vector<float> q, k, v, attn, ffn_a, ffn_b, ffn_out;
  std::vector<float> lora_t, lora_u;  // LoRA terms: A x [n, r], B (A x) [n, n_out]
  std::vector<float> block_out;  // an operation's result before it is added (accumulate)
  std::vector<uint16_t> kv_k16, kv_vt16;  // quantized cache read back as f16: [n_kv, n_embd_kv], [n_embd_kv, n_kv]
                                          // (beside an f32 / bf16 half: V as rows [n_kv, n_embd_kv])
  std::vector<float> kv_row32;            // one quantized cache row as f32: [n_embd_kv]
  // Mixture of experts: router probabilities and per-expert gathered rows.
  std::vector<float> router, moe_in, moe_a, moe_b, moe_out, shexp_gate;
  // RWKV's time and channel mixes (cpu_rwkv.cpp).
  std::vector<float> rwkv;
  // RoPE tables of the batch's positions, per prepared table: [n_tokens, n_rot/2].
  std::vector<std::vector<float>> rope_cos, rope_sin;
  MatmulScratch matmul;
  AttentionScratch attention;
  // Sees the inputs of the weight products when set (backend/matmul_observer.h).
  backend::MatmulObserver* observer = nullptr;
};

// v resized to at least n elements; returns its data.
inline float* grow(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}
inline uint16_t* grow(std::vector<uint16_t>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  return v.data();
}

}  // namespace ferrite::cpu
