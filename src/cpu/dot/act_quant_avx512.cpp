// AVX-512 Q8_K activation quantizer, bit-identical to the reference in
// quant_dot_ref.cpp: the same float operations in the same order per value
// (iscale * x, round half to even, clamp), the same choice of the value of
// largest magnitude (its first occurrence), and exact integer 16-sums.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "cpu/dot/act_quant.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_K;
using quant::kQKK;

constexpr int kLanes = 16;                    // floats per 512-bit vector
constexpr int kVecsPerBlock = kQKK / kLanes;  // 16, one per 16-sum
constexpr float kQ8Max = 127.0f;

inline __m512 abs_ps(__m512 v) { return _mm512_abs_ps(v); }

}  // namespace

void quantize_q8_k_avx512(const float* x, void* dst, int64_t k) {
  auto* out = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < k / kQKK; ++b) {
    const float* xb = x + b * kQKK;
    BlockQ8_K& o = out[b];
    // max|x| over the block; max_ps returns its second operand when either
    // is NaN, so NaN values are skipped, as the reference's `>` skips them.
    __m512 m = _mm512_setzero_ps();
    for (int i = 0; i < kVecsPerBlock; ++i) m = _mm512_max_ps(abs_ps(_mm512_loadu_ps(xb + i * kLanes)), m);
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) {
      std::memset(&o, 0, sizeof o);
      continue;
    }
    // The first value whose magnitude is amax (the reference keeps the first).
    const __m512 vamax = _mm512_set1_ps(amax);
    float vmax = amax;
    for (int i = 0; i < kVecsPerBlock; ++i) {
      const __mmask16 hit = _mm512_cmp_ps_mask(abs_ps(_mm512_loadu_ps(xb + i * kLanes)), vamax, _CMP_EQ_OQ);
      if (hit != 0) {
        vmax = xb[i * kLanes + __builtin_ctz(hit)];
        break;
      }
    }
    const float iscale = -kQ8Max / vmax;
    const __m512 vis = _mm512_set1_ps(iscale);
    const __m512 hi = _mm512_set1_ps(kQ8Max);
    const __m512 lo = _mm512_set1_ps(-kQ8Max);
    for (int i = 0; i < kVecsPerBlock; ++i) {
      const __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(vis, _mm512_loadu_ps(xb + i * kLanes)),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      // min_ps(r, 127) gives 127 for NaN r, as fmin(127, NaN) does.
      const __m512i q = _mm512_cvtps_epi32(_mm512_max_ps(_mm512_min_ps(r, hi), lo));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(o.qs + i * kLanes), _mm512_cvtepi32_epi8(q));
      o.bsums[i] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    o.d = 1.0f / iscale;
  }
}

}  // namespace ferrite::cpu
