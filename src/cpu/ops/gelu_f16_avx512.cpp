// AVX-512 tabulated GELU (gelu_f16.h): 16 values per step, rounded to f16
// by vcvtps2ph (round to nearest even, as fp32_to_fp16), looked up with a
// 32-bit gather whose low half is the entry, widened by vcvtph2ps.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "cpu/ops/gelu_f16.h"

namespace ferrite::cpu {
namespace {

constexpr int kLanes = 16;
constexpr float kLowCut = -10.0f;   // gelu_f16.cpp's bounds: 0 at or below,
constexpr float kHighCut = 10.0f;   // x at or above
constexpr int kEntryBytes = 2;

}  // namespace

void geglu_f16_avx512(const uint16_t* table, const float* x, const float* up, int64_t n, float* y) {
  const __m512 low = _mm512_set1_ps(kLowCut);
  const __m512 high = _mm512_set1_ps(kHighCut);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i entry = _mm512_i32gather_epi32(_mm512_cvtepu16_epi32(h), table, kEntryBytes);
    __m512 g = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(entry));
    g = _mm512_mask_mov_ps(g, _mm512_cmp_ps_mask(v, high, _CMP_GE_OQ), v);
    g = _mm512_mask_mov_ps(g, _mm512_cmp_ps_mask(v, low, _CMP_LE_OQ), _mm512_setzero_ps());
    if (up != nullptr) g = _mm512_mul_ps(g, _mm512_loadu_ps(up + i));
    _mm512_storeu_ps(y + i, g);
  }
  for (; i < n; ++i) y[i] = up != nullptr ? gelu_f16(x[i]) * up[i] : gelu_f16(x[i]);
}

}  // namespace ferrite::cpu
