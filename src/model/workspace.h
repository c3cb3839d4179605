// Scratch memory of a forward pass, reused from step to step (grown on
// demand, never shrunk) so decoding allocates nothing once warm.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/attention.h"
#include "cpu/matmul.h"

namespace ferrite::model {

class MatmulObserver;

struct Workspace {
  // Activations, row-major [n_tokens, width].
  std::vector<float> x, h, q, k, v, attn, ffn_a, ffn_b, ffn_out;
  std::vector<float> block_out;  // what a layer adds to the residual stream
  std::vector<uint16_t> kv_k16, kv_vt16;  // quantized cache read back as f16: [n_kv, n_embd_kv], [n_embd_kv, n_kv]
  std::vector<float> kv_row32;            // one quantized cache row as f32: [n_embd_kv]
  // Mixture of experts: router probabilities and per-expert gathered rows.
  std::vector<float> router, moe_in, moe_a, moe_b, moe_out, shexp_gate;
  std::vector<int32_t> moe_rows;
  std::vector<float> moe_weights;
  // RoPE tables of the batch's positions, [n_tokens, n_rot/2].
  std::vector<float> rope_cos, rope_sin;
  // Final norm of the output rows.
  std::vector<float> out_rows;
  cpu::MatmulScratch matmul;
  cpu::AttentionScratch attention;
  // Sees the inputs of the weight products when set (matmul_observer.h).
  MatmulObserver* observer = nullptr;
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

}  // namespace ferrite::model
