// AVX-512 dequantizers. Same float operations as the reference kernels
// (multiply then subtract/add, never fused), so the output is bit-identical.
// GCC 12 warns inside its own AVX-512 headers (_mm512_undefined_*); not our code.
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dequant_ref.h"
#include "quant/dequant_simd.h"

namespace ferrite::quant::avx512 {
namespace {

constexpr int kLanes = 16;

inline __m512 i8x16_to_ps(const int8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline __m512 u8x16_to_ps(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// y[0..n) = float(q[i]) * d  (n multiple of 16)
inline void scale_i8(const int8_t* q, float d, float* y, int n) {
  const __m512 vd = _mm512_set1_ps(d);
  for (int i = 0; i < n; i += kLanes) _mm512_storeu_ps(y + i, _mm512_mul_ps(i8x16_to_ps(q + i), vd));
}

// y[0..n) = d * float(q[i]) - m  (n multiple of 16)
inline void scale_u8_sub(const uint8_t* q, float d, float m, float* y, int n) {
  const __m512 vd = _mm512_set1_ps(d), vm = _mm512_set1_ps(m);
  for (int i = 0; i < n; i += kLanes) {
    _mm512_storeu_ps(y + i, _mm512_sub_ps(_mm512_mul_ps(vd, u8x16_to_ps(q + i)), vm));
  }
}

}  // namespace

void dequant_f16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i))));
  }
  for (; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
}

void dequant_bf16(const void* src, float* dst, int64_t n) {
  const auto* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i)));
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
  }
  for (; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
}

void dequant_q4_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  const __m128i low_mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(raw, low_mask), eight);
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), low_mask), eight);
    const __m512 vd = _mm512_set1_ps(fp16_to_fp32(b[i].d));
    _mm512_storeu_ps(dst, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), vd));
    _mm512_storeu_ps(dst + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), vd));
  }
}

void dequant_q8_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) scale_i8(b[i].qs, fp16_to_fp32(b[i].d), dst, kQK);
}

void dequant_q4_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  const __m256i low_mask = _mm256_set1_epi8(0x0F);
  alignas(32) uint8_t lo[32], hi[32];
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const float dmin = fp16_to_fp32(b[i].dmin);
    for (int is = 0; is < 8; is += 2, dst += 64) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs + 16 * is));
      _mm256_store_si256(reinterpret_cast<__m256i*>(lo), _mm256_and_si256(raw, low_mask));
      _mm256_store_si256(reinterpret_cast<__m256i*>(hi), _mm256_and_si256(_mm256_srli_epi16(raw, 4), low_mask));
      uint8_t sc, m;
      ref::k_scale_min(is, b[i].scales, &sc, &m);
      scale_u8_sub(lo, d * static_cast<float>(sc), dmin * static_cast<float>(m), dst, 32);
      ref::k_scale_min(is + 1, b[i].scales, &sc, &m);
      scale_u8_sub(hi, d * static_cast<float>(sc), dmin * static_cast<float>(m), dst + 32, 32);
    }
  }
}

void dequant_q6_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3), bias = _mm256_set1_epi8(32);
  alignas(32) int8_t q[128];
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    for (int half = 0; half < 2; ++half, dst += 128) {
      const uint8_t* ql = b[i].ql + 64 * half;
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qh + 32 * half));
      auto high = [&](int shift) {
        return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, shift), m2), 4);
      };
      const __m256i q1 = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(l0, m4), high(0)), bias);
      const __m256i q2 = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(l1, m4), high(2)), bias);
      const __m256i q3 = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), high(4)), bias);
      const __m256i q4 = _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), high(6)), bias);
      _mm256_store_si256(reinterpret_cast<__m256i*>(q), q1);
      _mm256_store_si256(reinterpret_cast<__m256i*>(q + 32), q2);
      _mm256_store_si256(reinterpret_cast<__m256i*>(q + 64), q3);
      _mm256_store_si256(reinterpret_cast<__m256i*>(q + 96), q4);
      const int8_t* sc = b[i].scales + 8 * half;
      for (int g = 0; g < 8; ++g) scale_i8(q + 16 * g, d * static_cast<float>(sc[g]), dst + 16 * g, 16);
    }
  }
}

}  // namespace ferrite::quant::avx512
