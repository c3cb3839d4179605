// AVX-512 primitives of attention over a cache of rows (attention_rows.h):
// dot products and weighted row sums sixteen lanes at a time (two
// accumulators for the dot), the tail under a lane mask; f16 rows widened
// with vcvtph2ps, bf16 rows by a 16-bit shift.
// (GCC 12 warns of the intrinsics' own _mm512_undefined_epi32 when inlined.)
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "cpu/attention/attention_rows_impl.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kLanes = 16;

inline __m512 load16(KvElem e, const void* row, int64_t i, __mmask16 m) {
  switch (e) {
    case KvElem::F32:
      return _mm512_maskz_loadu_ps(m, static_cast<const float*>(row) + i);
    case KvElem::BF16: {
      const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(row) + i);
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    case KvElem::F16:
      break;
  }
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(row) + i));
}

inline __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

struct Avx512Rows {
  static float dot(KvElem e, const float* q, const void* row, int64_t n) {
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
      acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), load16(e, row, i, 0xFFFF), acc0);
      acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + kLanes), load16(e, row, i + kLanes, 0xFFFF), acc1);
    }
    for (; i < n; i += kLanes) {
      const __mmask16 m = n - i >= kLanes ? __mmask16{0xFFFF} : tail_mask(n - i);
      acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), load16(e, row, i, m), acc0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
  }
  static void axpy(KvElem e, float p, const void* row, float* out, int64_t n) {
    const __m512 pv = _mm512_set1_ps(p);
    for (int64_t i = 0; i < n; i += kLanes) {
      const __mmask16 m = n - i >= kLanes ? __mmask16{0xFFFF} : tail_mask(n - i);
      _mm512_mask_storeu_ps(out + i, m, _mm512_fmadd_ps(pv, load16(e, row, i, m), _mm512_maskz_loadu_ps(m, out + i)));
    }
  }
};

}  // namespace

void attention_rows_avx512(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch) {
  rows_impl::attention_rows_run<Avx512Rows>(a, pool, scratch);
}

}  // namespace ferrite::cpu
