// AVX2 activation quantizers, bit for bit the references of quant_dot_ref.cpp
// (the same float operations per value in the same order, the same maximum,
// exact integer sums): Q8_0 with the block scales as f32 and the block sums
// that the packed products read, and Q8_K with its 16-sums.
#include <immintrin.h>

#include <cstring>

#include "core/fp16.h"
#include "cpu/dot/act_quant.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_K;
using quant::kQK;
using quant::kQKK;

constexpr int kLanes = 8;
constexpr float kQ8Max = 127.0f;

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// Four vectors of 8 int32 (each within int8) to 32 int8 in order.
inline __m256i pack32(__m256i q0, __m256i q1, __m256i q2, __m256i q3) {
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// The four sums of the 8 lanes of s0..s3.
inline __m128i hsum4(__m256i s0, __m256i s1, __m256i s2, __m256i s3) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s0, s1), _mm256_hadd_epi32(s2, s3));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

inline int32_t hsum(__m256i v) {
  __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(t);
}

}  // namespace

void quantize_q8_0_avx2(const float* x, void* dst, float* d_out, int32_t* sum_out, int64_t k) {
  auto* out = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < k / kQK; ++b) {
    const float* xb = x + b * kQK;
    __m256 v[4];
    // max_ps returns its second operand when either is NaN: NaN values are
    // skipped, as the reference's fmax skips them.
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(xb + i * kLanes);
      m = _mm256_max_ps(abs_ps(v[i]), m);
    }
    const float amax = hmax(m);
    const float d = amax / kQ8Max;
    const float id = amax != 0.0f ? kQ8Max / amax : 0.0f;
    out[b].d = fp32_to_fp16(d);
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    // cvtps2dq rounds to nearest even (the default MXCSR mode), as nearbyint.
    for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], vid));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), pack32(q[0], q[1], q[2], q[3]));
    if (d_out != nullptr) d_out[b] = fp16_to_fp32(out[b].d);
    if (sum_out != nullptr) {
      sum_out[b] = hsum(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    }
  }
}

void quantize_q8_0_avx2(const float* x, void* dst, int64_t k) { quantize_q8_0_avx2(x, dst, nullptr, nullptr, k); }

void quantize_q8_k_avx2(const float* x, void* dst, int64_t k) {
  constexpr int kVecs = kQKK / kLanes;  // 32
  auto* out = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < k / kQKK; ++b) {
    const float* xb = x + b * kQKK;
    BlockQ8_K& o = out[b];
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < kVecs; ++i) m = _mm256_max_ps(abs_ps(_mm256_loadu_ps(xb + i * kLanes)), m);
    const float amax = hmax(m);
    if (amax == 0.0f) {
      std::memset(&o, 0, sizeof o);
      continue;
    }
    // The first value whose magnitude is amax (the reference keeps the first).
    const __m256 vamax = _mm256_set1_ps(amax);
    float vmax = amax;
    for (int i = 0; i < kVecs; ++i) {
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(xb + i * kLanes)), vamax, _CMP_EQ_OQ));
      if (hit != 0) {
        vmax = xb[i * kLanes + __builtin_ctz(static_cast<unsigned>(hit))];
        break;
      }
    }
    const float iscale = -kQ8Max / vmax;
    const __m256 vis = _mm256_set1_ps(iscale);
    const __m256 hi = _mm256_set1_ps(kQ8Max);
    const __m256 lo = _mm256_set1_ps(-kQ8Max);
    for (int g = 0; g < kVecs; g += 8) {  // 64 values: four 16-sums
      __m256i q[8];
      for (int i = 0; i < 8; ++i) {
        const __m256 r = _mm256_round_ps(_mm256_mul_ps(vis, _mm256_loadu_ps(xb + (g + i) * kLanes)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        // min_ps(r, 127) gives 127 for NaN r, as fmin(127, NaN) does.
        q[i] = _mm256_cvtps_epi32(_mm256_max_ps(_mm256_min_ps(r, hi), lo));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.qs + g * kLanes), pack32(q[0], q[1], q[2], q[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.qs + g * kLanes + 32), pack32(q[4], q[5], q[6], q[7]));
      const __m128i s = hsum4(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]), _mm256_add_epi32(q[4], q[5]),
                              _mm256_add_epi32(q[6], q[7]));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(o.bsums + g / 2), _mm_packs_epi32(s, s));
    }
    o.d = 1.0f / iscale;
  }
}

}  // namespace ferrite::cpu
