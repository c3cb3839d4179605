// AVX-512 (VNNI) quantized dot products. vpdpbusd multiplies unsigned by
// signed bytes and adds groups of four into 32-bit lanes, so:
//   Q4_0: nibbles (0..15, unsigned) · q_a, minus 8 · sum(q_a)
//   Q8_0: |q_w| · (q_a with q_w's sign)
// Two blocks (64 values) per 512-bit step; one f32 FMA per block pair.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cmath>

#include "core/fp16.h"
#include "cpu/quant_dot.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;
using quant::kQK;

constexpr float kQ8Max = 127.0f;

size_t q8_0_row_bytes(int64_t k) { return static_cast<size_t>(k / kQK) * sizeof(BlockQ8_0); }

void quantize_q8_0(const float* x, void* dst, int64_t k) {
  auto* out = static_cast<BlockQ8_0*>(dst);
  const __m512 sign_off = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
  for (int64_t b = 0; b < k / kQK; ++b) {
    const __m512 v0 = _mm512_loadu_ps(x + b * kQK);
    const __m512 v1 = _mm512_loadu_ps(x + b * kQK + 16);
    const __m512 a = _mm512_max_ps(_mm512_and_ps(v0, sign_off), _mm512_and_ps(v1, sign_off));
    const float amax = _mm512_reduce_max_ps(a);
    const float d = amax / kQ8Max;
    const float id = amax != 0.0f ? kQ8Max / amax : 0.0f;
    out[b].d = fp32_to_fp16(d);
    const __m512 vid = _mm512_set1_ps(id);
    // cvtps2dq rounds to nearest even (the default MXCSR mode).
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, vid));
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, vid));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out[b].qs + 16), _mm512_cvtsepi32_epi8(q1));
  }
}

inline float hsum8(__m256 v) {
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// 32 unsigned nibbles of a Q4_0 block: elements 0..15 (low) then 16..31 (high).
inline __m256i unpack_q4(const uint8_t* qs) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i mask = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), mask), _mm_and_si128(raw, mask));
}

float dot_q4_0_q8_0(const void* w_row, const void* act_row, int64_t k) {
  const auto* w = static_cast<const BlockQ4_0*>(w_row);
  const auto* a = static_cast<const BlockQ8_0*>(act_row);
  const __m256i ones = _mm256_set1_epi8(1);
  const __m256i eight = _mm256_set1_epi32(8);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  const int64_t nb = k / kQK;
  int64_t b = 0;
  for (; b + 1 < nb; b += 2) {
    const __m256i qa0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[b].qs));
    const __m256i qa1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[b + 1].qs));
    __m256i s0 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), unpack_q4(w[b].qs), qa0);
    __m256i s1 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), unpack_q4(w[b + 1].qs), qa1);
    s0 = _mm256_sub_epi32(s0, _mm256_mullo_epi32(eight, _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, qa0)));
    s1 = _mm256_sub_epi32(s1, _mm256_mullo_epi32(eight, _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, qa1)));
    const float d0 = _cvtsh_ss(w[b].d) * _cvtsh_ss(a[b].d);
    const float d1 = _cvtsh_ss(w[b + 1].d) * _cvtsh_ss(a[b + 1].d);
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d0), _mm256_cvtepi32_ps(s0), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_set1_ps(d1), _mm256_cvtepi32_ps(s1), acc1);
  }
  for (; b < nb; ++b) {
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[b].qs));
    __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), unpack_q4(w[b].qs), qa);
    s = _mm256_sub_epi32(s, _mm256_mullo_epi32(eight, _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, qa)));
    acc0 = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(w[b].d) * _cvtsh_ss(a[b].d)), _mm256_cvtepi32_ps(s), acc0);
  }
  return hsum8(_mm256_add_ps(acc0, acc1));
}

float dot_q8_0_q8_0(const void* w_row, const void* act_row, int64_t k) {
  const auto* w = static_cast<const BlockQ8_0*>(w_row);
  const auto* a = static_cast<const BlockQ8_0*>(act_row);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  const int64_t nb = k / kQK;
  int64_t b = 0;
  auto block = [&](int64_t i) {
    const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i].qs));
    const __m256i qa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[i].qs));
    const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(qw), _mm256_sign_epi8(qa, qw));
    return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(w[i].d) * _cvtsh_ss(a[i].d)), _mm256_cvtepi32_ps(s));
  };
  for (; b + 1 < nb; b += 2) {
    acc0 = _mm256_add_ps(acc0, block(b));
    acc1 = _mm256_add_ps(acc1, block(b + 1));
  }
  for (; b < nb; ++b) acc0 = _mm256_add_ps(acc0, block(b));
  return hsum8(_mm256_add_ps(acc0, acc1));
}

const QuantDot kQ4_0{ActQuant::Q8_0, q8_0_row_bytes, quantize_q8_0, dot_q4_0_q8_0};
const QuantDot kQ8_0{ActQuant::Q8_0, q8_0_row_bytes, quantize_q8_0, dot_q8_0_q8_0};

}  // namespace

const QuantDot* quant_dot_avx512(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return &kQ4_0;
    case TensorType::Q8_0:
      return &kQ8_0;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
