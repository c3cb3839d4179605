// AVX-512 version of round_levels (see round_levels.h): 16 values per step,
// the tail under a mask. Levels are bit-identical to the reference; the sums
// differ only in rounding (other summation order, fused multiply-adds).
#include <immintrin.h>

#include "quant/round_levels.h"

namespace ferrite::quant::avx512 {

namespace {
// Sum of the 16 lanes by swapping halves, quarters, pairs and neighbours.
float horizontal_sum(__m512 v) {
  constexpr __mmask16 kAll = 0xFFFF;
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(kAll, v, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(kAll, v, v, 0xB1));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(kAll, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(kAll, v, 0xB1));
  return _mm512_cvtss_f32(v);
}
}  // namespace

LevelSums round_levels(const float* x, const float* w, const float* wx, int n, float iscale, float origin, int lo,
                       int hi, int* L) {
  constexpr int kLanes = 16;
  // The maskz forms with a full mask: GCC 12 warns about the unmasked ones
  // (they start from an undefined vector).
  constexpr __mmask16 kAll = 0xFFFF;
  const __m512 vscale = _mm512_set1_ps(iscale);
  const __m512 vorigin = _mm512_set1_ps(origin);
  const __m512 vlo = _mm512_set1_ps(static_cast<float>(lo));
  const __m512 vhi = _mm512_set1_ps(static_cast<float>(hi));
  const __m512i sign_bit = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512i half = _mm512_castps_si512(_mm512_set1_ps(0.5f));
  __m512 sl = _mm512_setzero_ps(), sll = _mm512_setzero_ps(), sxl = _mm512_setzero_ps();
  for (int i = 0; i < n; i += kLanes) {
    const __mmask16 m = n - i >= kLanes ? static_cast<__mmask16>(0xFFFF)
                                        : static_cast<__mmask16>((1u << (n - i)) - 1u);
    __m512 v = _mm512_mul_ps(vscale, _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), vorigin));
    v = _mm512_maskz_max_ps(kAll, v, vlo);  // NaN -> lo, as the reference
    v = _mm512_maskz_min_ps(kAll, v, vhi);
    // +-0.5 with the sign of v, then truncate: round half away from zero.
    const __m512 h = _mm512_castsi512_ps(_mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(v), sign_bit), half));
    const __m512i li = _mm512_maskz_cvttps_epi32(kAll, _mm512_add_ps(v, h));
    _mm512_mask_storeu_epi32(L + i, m, li);
    const __m512 fl = _mm512_maskz_cvtepi32_ps(kAll, li);
    const __m512 vw = _mm512_maskz_loadu_ps(m, w + i);
    const __m512 wl = _mm512_mul_ps(vw, fl);
    sl = _mm512_add_ps(sl, wl);
    sll = _mm512_fmadd_ps(wl, fl, sll);
    sxl = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, wx + i), fl, sxl);
  }
  return {horizontal_sum(sl), horizontal_sum(sll), horizontal_sum(sxl)};
}

}  // namespace ferrite::quant::avx512
