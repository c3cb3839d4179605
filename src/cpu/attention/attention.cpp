#include "cpu/attention/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/fp16.h"
#include "cpu/ops/activations.h"
#include "cpu/attention/alibi.h"
#include "cpu/attention/attention_avx2.h"
#include "cpu/attention/attention_avx512.h"
#include "cpu/attention/attention_blocks.h"
#include "cpu/attention/attention_rows.h"
#include "cpu/features.h"
#include "cpu/ops/tanh_f32.h"
#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One (token, head) pair.
void attend_one(const AttentionArgs& a, const VecOps& ops, int64_t t, int64_t h, float* scores, uint16_t* q16,
                uint16_t* p16) {
  const int64_t group = a.n_head / a.n_head_kv;
  const int64_t g = h / group;
  const float* q = a.q + (t * a.n_head + h) * a.head_dim;
  const TokenRange r = token_range(a, t);
  const float* mask = r.mask;
  const uint16_t* kbase = a.k + r.begin * a.kv_stride;
  const float slope = alibi_slope(h, a.n_head, a.max_alibi_bias);
  ops.f32_to_f16(q, q16, a.head_dim);
  for (int64_t j = 0; j < r.len; ++j) {
    if (mask[j] == kNegInf) {
      scores[j] = kNegInf;
      continue;
    }
    float s = ops.dot_f16(q16, kbase + j * a.kv_stride + g * a.head_dim, a.head_dim) * a.scale;
    // Soft-capping as llama.cpp orders it: scale by 1/cap, tanh, scale by cap.
    if (a.softcap > 0.0f) s = tanh_f32(s * (1.0f / a.softcap)) * a.softcap;
    scores[j] = s + mask_term(a, h, slope, mask[j]);
  }
  if (a.sinks != nullptr) {
    softmax_inplace(scores, r.len, a.sinks[h]);
  } else {
    softmax_inplace(scores, r.len);
  }
  ops.f32_to_f16(scores, p16, r.len);
  float* out = a.out + (t * a.n_head + h) * a.head_dim;
  for (int64_t d = 0; d < a.head_dim; ++d) {
    out[d] = ops.dot_f16(p16, a.vt + (g * a.head_dim + d) * a.vt_stride + r.begin, r.len);
  }
}

}  // namespace

void split_attention_tokens(const AttentionArgs& a, int64_t max_tokens, std::vector<int64_t>& starts) {
  starts.clear();
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const bool same = a.kv_begin == nullptr ||
                      (t > 0 && a.kv_begin[t] == a.kv_begin[t - 1] && a.kv_len[t] == a.kv_len[t - 1]);
    if (starts.empty() || !same || t - starts.back() >= max_tokens) starts.push_back(t);
  }
  starts.push_back(a.n_tokens);
}

float mask_term(const AttentionArgs& a, int64_t h, float slope, float m) {
  if (a.dist_bias == nullptr) return slope * m;
  const auto d = std::min(static_cast<int64_t>(-m), a.n_dist - 1);
  return a.dist_bias[h * a.n_dist + d];
}

TokenRange token_range(const AttentionArgs& a, int64_t t) {
  if (a.kv_begin == nullptr) return {0, a.n_kv, a.mask + t * a.n_kv};
  const int64_t stride = a.mask_stride > 0 ? a.mask_stride : a.n_kv;
  return {a.kv_begin[t], a.kv_len[t], a.mask + t * stride};
}

void attention(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch) {
  if (a.k_rows != nullptr) return attention_rows(a, pool, scratch);
  if (a.dist_bias != nullptr) return attention_generic(a, pool, scratch);
  if (active_isa() == Isa::Avx512 && attention_avx512_applies(a)) return attention_avx512(a, pool, scratch);
  if (active_isa() == Isa::Avx2 && attention_avx2_applies(a)) return attention_avx2(a, pool, scratch);
  attention_generic(a, pool, scratch);
}

void attention_generic(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch) {
  if (a.k_rows != nullptr) return attention_rows_generic(a, pool, scratch);
  const size_t n_threads = static_cast<size_t>(pool.size());
  // (each on its own: the encoders' attention sizes only the scores)
  if (scratch.scores.size() < n_threads) scratch.scores.resize(n_threads);
  if (scratch.q16.size() < n_threads) scratch.q16.resize(n_threads);
  if (scratch.p16.size() < n_threads) scratch.p16.resize(n_threads);
  const VecOps& ops = vec_ops();
  pool.run([&](int ith, int nth) {
    std::vector<float>& scores = scratch.scores[static_cast<size_t>(ith)];
    std::vector<uint16_t>& q16 = scratch.q16[static_cast<size_t>(ith)];
    std::vector<uint16_t>& p16 = scratch.p16[static_cast<size_t>(ith)];
    if (p16.size() < static_cast<size_t>(a.n_kv)) p16.resize(static_cast<size_t>(a.n_kv));
    if (scores.size() < static_cast<size_t>(a.n_kv)) scores.resize(static_cast<size_t>(a.n_kv));
    if (q16.size() < static_cast<size_t>(a.head_dim)) q16.resize(static_cast<size_t>(a.head_dim));
    const Range work = split_range(a.n_tokens * a.n_head, ith, nth);
    for (int64_t w = work.begin; w < work.end; ++w) {
      attend_one(a, ops, w / a.n_head, w % a.n_head, scores.data(), q16.data(), p16.data());
    }
  }, 2 * a.n_tokens * a.n_head * (a.kv_begin != nullptr ? std::max<int64_t>(a.mask_stride, 1) : a.n_kv) * a.head_dim);
}

void attention_ref(const AttentionArgs& a) {
  if (a.k_rows != nullptr) return attention_rows_ref(a);
  const int64_t group = a.n_head / a.n_head_kv;
  std::vector<double> scores(static_cast<size_t>(a.n_kv));
  std::vector<float> q16(static_cast<size_t>(a.head_dim));
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const TokenRange r = token_range(a, t);
    const float* mask = r.mask;
    for (int64_t h = 0; h < a.n_head; ++h) {
      const int64_t g = h / group;
      const float slope = alibi_slope(h, a.n_head, a.max_alibi_bias);
      const float* q = a.q + (t * a.n_head + h) * a.head_dim;
      for (int64_t d = 0; d < a.head_dim; ++d) q16[d] = fp16_to_fp32(fp32_to_fp16(q[d]));
      const double sink = sink_of(a, h);
      double max = sink;
      for (int64_t j = 0; j < r.len; ++j) {
        if (mask[j] == kNegInf) {
          scores[j] = -std::numeric_limits<double>::infinity();
          continue;
        }
        const uint16_t* k = a.k + (r.begin + j) * a.kv_stride + g * a.head_dim;
        double s = 0.0;
        for (int64_t d = 0; d < a.head_dim; ++d) s += static_cast<double>(q16[d]) * fp16_to_fp32(k[d]);
        s *= a.scale;
        if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
        scores[j] = s + static_cast<double>(mask_term(a, h, slope, mask[j]));
        max = std::max(max, scores[j]);
      }
      double sum = std::isinf(sink) ? 0.0 : std::exp(sink - max);
      for (int64_t j = 0; j < r.len; ++j) {
        scores[j] = std::isinf(scores[j]) ? 0.0 : std::exp(scores[j] - max);
        sum += scores[j];
      }
      float* out = a.out + (t * a.n_head + h) * a.head_dim;
      for (int64_t d = 0; d < a.head_dim; ++d) {
        double acc = 0.0;
        for (int64_t j = 0; j < r.len; ++j) {
          if (scores[j] == 0.0) continue;
          const float p = fp16_to_fp32(fp32_to_fp16(static_cast<float>(scores[j] / sum)));
          acc += static_cast<double>(p) * fp16_to_fp32(a.vt[(g * a.head_dim + d) * a.vt_stride + r.begin + j]);
        }
        out[d] = static_cast<float>(acc);
      }
    }
  }
}

}  // namespace ferrite::cpu
