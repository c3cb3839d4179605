// Attention over a cache of rows (AttentionArgs::k_rows): K and V both
// [n_kv, kv_stride], each f32, bf16 or f16 (V not transposed), as the f32
// and bf16 KV caches keep them (runtime/kv_cache.h). The formula is
// attention.h's; the operands are rounded as llama.cpp's matrix products
// with a cache of that type round them: the query to K's type and the
// probabilities to V's (f16 and bf16: round to nearest even; f32: kept), so
// with f32 K and V the whole computation is f32, and the scores, softmax and
// the weighted sum of V rows are summed in f32:
//   s_j = scale * dot(round_K(q), K_j) (+ soft-cap, mask, ALiBi / T5 bias)
//   p = softmax(s) (with sinks as attention.h)
//   out = sum_j round_V(p_j) V_j        (in cell order)
// The generic path (scalar primitives, any target) and the AVX2 and AVX-512
// paths share the loop (attention_rows_impl.h) and differ only in how a dot
// product and a weighted row sum are vectorized, so they agree with the
// double-precision reference to f32 rounding, not bit for bit.
#pragma once

#include "cpu/attention/attention.h"

namespace ferrite::cpu {

// The path of the active level (AVX-512, AVX2 or generic).
void attention_rows(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch);
void attention_rows_generic(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch);
// Require their level on this CPU (attention_rows_avx2.cpp, attention_rows_avx512.cpp).
void attention_rows_avx2(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch);
void attention_rows_avx512(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch);

// Single-threaded plain reference: the same operand rounding, double sums.
void attention_rows_ref(const AttentionArgs& a);

// x rounded to what a cache element of type e holds (f32: x itself).
float round_to_elem(KvElem e, float x);

}  // namespace ferrite::cpu
