#include "cpu/attention/attention_rows.h"

#include <cmath>
#include <limits>

#include "core/fp16.h"
#include "cpu/attention/alibi.h"
#include "cpu/attention/attention_rows_impl.h"
#include "cpu/features.h"

namespace ferrite::cpu {
namespace {

inline float elem_at(KvElem e, const void* row, int64_t i) {
  switch (e) {
    case KvElem::F32:
      return static_cast<const float*>(row)[i];
    case KvElem::BF16:
      return bf16_to_fp32(static_cast<const uint16_t*>(row)[i]);
    case KvElem::F16:
      break;
  }
  return fp16_to_fp32(static_cast<const uint16_t*>(row)[i]);
}

// The generic primitives: one element at a time, one f32 accumulator.
struct ScalarRows {
  static float dot(KvElem e, const float* q, const void* row, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s += q[i] * elem_at(e, row, i);
    return s;
  }
  static void axpy(KvElem e, float p, const void* row, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] += p * elem_at(e, row, i);
  }
};

}  // namespace

float round_to_elem(KvElem e, float x) {
  switch (e) {
    case KvElem::F32:
      return x;
    case KvElem::BF16:
      return bf16_to_fp32(fp32_to_bf16(x));
    case KvElem::F16:
      break;
  }
  return fp16_to_fp32(fp32_to_fp16(x));
}

void attention_rows(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch) {
  if (active_isa() == Isa::Avx512) return attention_rows_avx512(a, pool, scratch);
  if (active_isa() == Isa::Avx2) return attention_rows_avx2(a, pool, scratch);
  attention_rows_generic(a, pool, scratch);
}

void attention_rows_generic(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch) {
  rows_impl::attention_rows_run<ScalarRows>(a, pool, scratch);
}

void attention_rows_ref(const AttentionArgs& a) {
  const int64_t group = a.n_head / a.n_head_kv;
  std::vector<double> scores(static_cast<size_t>(a.n_kv));
  std::vector<double> qr(static_cast<size_t>(a.head_dim));
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const TokenRange r = token_range(a, t);
    for (int64_t h = 0; h < a.n_head; ++h) {
      const int64_t g = h / group;
      const float slope = alibi_slope(h, a.n_head, a.max_alibi_bias);
      const float* q = a.q + (t * a.n_head + h) * a.head_dim;
      for (int64_t d = 0; d < a.head_dim; ++d) qr[static_cast<size_t>(d)] = round_to_elem(a.k_elem, q[d]);
      const double sink = sink_of(a, h);
      double max = sink;
      for (int64_t j = 0; j < r.len; ++j) {
        double& s = scores[static_cast<size_t>(j)];
        if (std::isinf(r.mask[j]) && r.mask[j] < 0) {
          s = -std::numeric_limits<double>::infinity();
          continue;
        }
        const int64_t base = (r.begin + j) * a.kv_stride + g * a.head_dim;
        s = 0.0;
        for (int64_t d = 0; d < a.head_dim; ++d) s += qr[static_cast<size_t>(d)] * elem_at(a.k_elem, a.k_rows, base + d);
        s *= a.scale;
        if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
        s += static_cast<double>(mask_term(a, h, slope, r.mask[j]));
        max = std::max(max, s);
      }
      double sum = std::isinf(sink) ? 0.0 : std::exp(sink - max);
      for (int64_t j = 0; j < r.len; ++j) {
        double& s = scores[static_cast<size_t>(j)];
        s = std::isinf(s) ? 0.0 : std::exp(s - max);
        sum += s;
      }
      float* out = a.out + (t * a.n_head + h) * a.head_dim;
      for (int64_t d = 0; d < a.head_dim; ++d) {
        double acc = 0.0;
        for (int64_t j = 0; j < r.len; ++j) {
          if (scores[static_cast<size_t>(j)] == 0.0) continue;
          const float p = round_to_elem(a.v_elem, static_cast<float>(scores[static_cast<size_t>(j)] / sum));
          acc += static_cast<double>(p) * elem_at(a.v_elem, a.v_rows, (r.begin + j) * a.kv_stride + g * a.head_dim + d);
        }
        out[d] = static_cast<float>(acc);
      }
    }
  }
}

}  // namespace ferrite::cpu
