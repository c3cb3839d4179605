// The loop of attention over a cache of rows (attention_rows.h), shared by
// its generic, AVX2 and AVX-512 paths. P (the level's primitives) provides
//   float P::dot(KvElem e, const float* q, const void* row, int64_t n)
//     sum_i q[i] * row[i] in f32, the row of element type e;
//   void P::axpy(KvElem e, float p, const void* row, float* out, int64_t n)
//     out[i] += p * row[i].
// Included only by those three sources, each compiled for its level (so
// everything here has internal linkage: no copy built for one level is
// shared with another).
#pragma once

#include <cstddef>
#include <limits>

#include "cpu/ops/activations.h"
#include "cpu/attention/alibi.h"
#include "cpu/attention/attention_rows.h"
#include "cpu/ops/tanh_f32.h"

namespace ferrite::cpu::rows_impl {

// Bytes of one element of type e.
static inline int64_t elem_bytes(KvElem e) { return e == KvElem::F32 ? 4 : 2; }

static inline const void* row_at(const void* base, KvElem e, int64_t index) {
  return static_cast<const uint8_t*>(base) + index * elem_bytes(e);
}

// One (token, head) pair: scores [r.len], qr [head_dim] scratch.
template <class P>
static void attend_row_one(const AttentionArgs& a, int64_t t, int64_t h, float* scores, float* qr) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t g = h / (a.n_head / a.n_head_kv);
  const float* q = a.q + (t * a.n_head + h) * a.head_dim;
  const TokenRange r = token_range(a, t);
  const float slope = alibi_slope(h, a.n_head, a.max_alibi_bias);
  for (int64_t d = 0; d < a.head_dim; ++d) qr[d] = round_to_elem(a.k_elem, q[d]);
  for (int64_t j = 0; j < r.len; ++j) {
    if (r.mask[j] == kNegInf) {
      scores[j] = kNegInf;
      continue;
    }
    const void* k = row_at(a.k_rows, a.k_elem, (r.begin + j) * a.kv_stride + g * a.head_dim);
    float s = P::dot(a.k_elem, qr, k, a.head_dim) * a.scale;
    if (a.softcap > 0.0f) s = tanh_f32(s * (1.0f / a.softcap)) * a.softcap;
    scores[j] = s + mask_term(a, h, slope, r.mask[j]);
  }
  if (a.sinks != nullptr) {
    softmax_inplace(scores, r.len, a.sinks[h]);
  } else {
    softmax_inplace(scores, r.len);
  }
  float* out = a.out + (t * a.n_head + h) * a.head_dim;
  std::fill_n(out, a.head_dim, 0.0f);
  for (int64_t j = 0; j < r.len; ++j) {
    const float p = round_to_elem(a.v_elem, scores[j]);
    if (p == 0.0f) continue;
    P::axpy(a.v_elem, p, row_at(a.v_rows, a.v_elem, (r.begin + j) * a.kv_stride + g * a.head_dim), out, a.head_dim);
  }
}

// Every (token, head) pair, split over the pool's threads.
template <class P>
static void attention_rows_run(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch) {
  const size_t n_threads = static_cast<size_t>(pool.size());
  if (scratch.scores.size() < n_threads) scratch.scores.resize(n_threads);
  if (scratch.block.size() < n_threads) scratch.block.resize(n_threads);
  pool.run([&](int ith, int nth) {
    std::vector<float>& scores = scratch.scores[static_cast<size_t>(ith)];
    std::vector<float>& qr = scratch.block[static_cast<size_t>(ith)];
    if (scores.size() < static_cast<size_t>(a.n_kv)) scores.resize(static_cast<size_t>(a.n_kv));
    if (qr.size() < static_cast<size_t>(a.head_dim)) qr.resize(static_cast<size_t>(a.head_dim));
    const Range work = split_range(a.n_tokens * a.n_head, ith, nth);
    for (int64_t w = work.begin; w < work.end; ++w) {
      attend_row_one<P>(a, w / a.n_head, w % a.n_head, scores.data(), qr.data());
    }
  }, 2 * a.n_tokens * a.n_head * (a.kv_begin != nullptr ? std::max<int64_t>(a.mask_stride, 1) : a.n_kv) * a.head_dim);
}

}  // namespace ferrite::cpu::rows_impl
