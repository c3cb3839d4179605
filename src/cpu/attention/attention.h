// Attention of a batch of query tokens over the f16 KV cache.
//
// For query token t and head h (kv head g = h / (n_head / n_head_kv)):
//   s_j = scale * (q_th · K[j, g])          for every cache cell j with mask[t, j] != -inf
//   s_j = softcap * tanh(s_j / softcap)     when softcap > 0
//   p   = softmax(s + slope_h * mask[t])    slope_h = 1 without ALiBi (cpu/attention/alibi.h)
//         (T5: s + dist_bias_h(-mask[t]) instead, the relative position bias)
//         with sinks (gpt-oss), sink_h joins its maximum and denominator:
//         p_j = exp(s_j - m) / (sum_i exp(s_i - m) + exp(sink_h - m)), m = max(max_j s_j, sink_h)
//   out[t, h] = sum_j p_j V[j, g]
// Like llama.cpp, q and p are rounded to f16 before their products with the
// f16 cache (the same operand rounding its f16 matrix products apply), and V
// is stored transposed so that each output element is one dot product over
// the cells (contiguous in memory, and summed in the same order).
// A cache of rows (k_rows set: the f32 and bf16 caches) goes to
// attention_rows.h instead.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/thread_pool.h"

namespace ferrite::cpu {

// The element type of a cache of rows (AttentionArgs::k_rows / v_rows).
enum class KvElem : uint8_t { F16, BF16, F32 };

struct AttentionArgs {
  const float* q = nullptr;      // [n_tokens, n_head, head_dim]
  const uint16_t* k = nullptr;   // [n_kv, kv_stride] f16; head g at offset g * head_dim
  const uint16_t* vt = nullptr;  // V transposed: [n_head_kv * head_dim, vt_stride] f16
  int64_t vt_stride = 0;         // elements between rows of vt (the cache's cell count)
  int64_t kv_stride = 0;         // elements between cache cells (n_head_kv * head_dim)
  int64_t n_kv = 0;              // cache cells considered
  const float* mask = nullptr;   // [n_tokens, n_kv]: 0 visible, -inf hidden
  // Optional per-token ranges: token t reads cells [kv_begin[t], kv_begin[t] + kv_len[t])
  // only (inside [0, n_kv)), and mask row t (at t * mask_stride) covers just those cells.
  const int32_t* kv_begin = nullptr;  // [n_tokens], or nullptr: every token reads [0, n_kv)
  const int32_t* kv_len = nullptr;    // [n_tokens]
  int64_t mask_stride = 0;            // with kv_begin; 0: n_kv
  int64_t n_tokens = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;
  float softcap = 0.0f;          // 0: none
  // ALiBi (cpu/attention/alibi.h): head h adds alibi_slope(h) * mask, the mask holding
  // -|q_pos - k_pos| for visible cells; 0: none (the mask adds as it is).
  float max_alibi_bias = 0.0f;
  // T5's relative position bias (cpu/attention/rel_pos_bias.h): head h adds
  // dist_bias[h * n_dist + min(-mask, n_dist - 1)] instead of the mask, which
  // then holds -(q_pos - k_pos) for visible cells; null: none. The generic
  // path only.
  const float* dist_bias = nullptr;  // [n_head, n_dist]
  int64_t n_dist = 0;
  const float* sinks = nullptr;  // [n_head] attention sinks (unscaled logits), or null: none
  float* out = nullptr;          // [n_tokens, n_head, head_dim]
  // A cache of rows (attention_rows.h): K and V both [n_kv, kv_stride] of
  // k_elem / v_elem, V not transposed; k, vt and vt_stride are then unused.
  const void* k_rows = nullptr;
  const void* v_rows = nullptr;
  KvElem k_elem = KvElem::F16;
  KvElem v_elem = KvElem::F16;
};

// What a visible cell's mask value m adds to head h's score: T5's bias of the
// distance -m, or the ALiBi slope times m (1 times m without ALiBi).
// (Not inline: the per-level kernels call it.)
float mask_term(const AttentionArgs& a, int64_t h, float slope, float m);

// The cells token t reads: [begin, begin + len), and its mask row (len values).
struct TokenRange {
  int64_t begin = 0;
  int64_t len = 0;
  const float* mask = nullptr;
};
TokenRange token_range(const AttentionArgs& a, int64_t t);

// Head h's sink logit, or -infinity without sinks.
inline float sink_of(const AttentionArgs& a, int64_t h) {
  return a.sinks != nullptr ? a.sinks[h] : -__builtin_inff();
}

struct AttentionScratch {
  std::vector<std::vector<float>> scores;   // per thread [n_kv]
  std::vector<std::vector<uint16_t>> q16;   // per thread [head_dim]
  std::vector<std::vector<uint16_t>> p16;   // per thread [n_kv]
  // The AVX2 and AVX-512 kernels (attention_avx2.h, attention_avx512.h): per thread q, K tile, scores.
  std::vector<std::vector<float>> block;
  std::vector<std::vector<int32_t>> live;   // per thread: query indices
  std::vector<int64_t> token_blocks;        // first token of each block, then n_tokens
};

// Dispatches to the AVX2 or AVX-512 kernel of the active level when it
// applies (same bits as attention_generic() at that level); a cache of rows
// to attention_rows() (attention_rows.h).
void attention(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch);

// One dot_f16 per (token, head, cell) and per output element: the generic path.
void attention_generic(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch);

// Single-threaded plain reference (same operand rounding, double sums; a
// cache of rows: attention_rows_ref).
void attention_ref(const AttentionArgs& a);

}  // namespace ferrite::cpu
