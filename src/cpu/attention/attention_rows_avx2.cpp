// AVX2 primitives of attention over a cache of rows (attention_rows.h): dot
// products and weighted row sums eight lanes at a time (two accumulators for
// the dot), f16 rows widened with F16C, bf16 rows by a 16-bit shift.
#include <immintrin.h>

#include "core/fp16.h"
#include "cpu/attention/attention_rows_impl.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kLanes = 8;

inline __m256 load8(KvElem e, const void* row, int64_t i) {
  switch (e) {
    case KvElem::F32:
      return _mm256_loadu_ps(static_cast<const float*>(row) + i);
    case KvElem::BF16: {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + i));
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    case KvElem::F16:
      break;
  }
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + i)));
}

inline float scalar_at(KvElem e, const void* row, int64_t i) {
  if (e == KvElem::F32) return static_cast<const float*>(row)[i];
  const uint16_t h = static_cast<const uint16_t*>(row)[i];
  return e == KvElem::BF16 ? bf16_to_fp32(h) : fp16_to_fp32(h);
}

inline float hsum(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_movehdup_ps(x));
  return _mm_cvtss_f32(x);
}

struct Avx2Rows {
  static float dot(KvElem e, const float* q, const void* row, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
      acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(e, row, i), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + kLanes), load8(e, row, i + kLanes), acc1);
    }
    for (; i + kLanes <= n; i += kLanes) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(e, row, i), acc0);
    float s = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) s += q[i] * scalar_at(e, row, i);
    return s;
  }
  static void axpy(KvElem e, float p, const void* row, float* out, int64_t n) {
    const __m256 pv = _mm256_set1_ps(p);
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      _mm256_storeu_ps(out + i, _mm256_fmadd_ps(pv, load8(e, row, i), _mm256_loadu_ps(out + i)));
    }
    for (; i < n; ++i) out[i] += p * scalar_at(e, row, i);
  }
};

}  // namespace

void attention_rows_avx2(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch) {
  rows_impl::attention_rows_run<Avx2Rows>(a, pool, scratch);
}

}  // namespace ferrite::cpu
