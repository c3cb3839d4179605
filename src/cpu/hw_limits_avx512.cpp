// Peak-throughput loops at the AVX-512 level (see hw_limits.h): 16
// independent accumulators, enough to cover every unit's latency.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "cpu/hw_limits.h"

namespace ferrite::cpu {
namespace {

constexpr int kAcc = 16;
constexpr double kFmaOps = 2.0 * 16;     // 16 f32 lanes, multiply + add
constexpr double kBf16Ops = 2.0 * 32;    // 32 bf16 pairs
constexpr double kInt8Ops = 2.0 * 64;    // 64 u8 x s8 products

template <typename V, typename Step>
V run(long iters, V init, Step step) {
  V acc[kAcc];
  for (int j = 0; j < kAcc; ++j) acc[j] = init;
  for (long i = 0; i < iters; ++i) {
    for (int j = 0; j < kAcc; ++j) acc[j] = step(acc[j]);
    // Keeps the accumulators in registers across iterations.
    for (int j = 0; j < kAcc; ++j) asm volatile("" : "+v"(acc[j]));
  }
  V s = acc[0];
  for (int j = 1; j < kAcc; ++j) s = step(s);
  return s;
}

}  // namespace

double peak_loop_avx512(PeakKind k, long iters) {
  volatile float sink = 0.0f;
  switch (k) {
    case PeakKind::F32Fma: {
      const __m512 a = _mm512_set1_ps(1.0001f), b = _mm512_set1_ps(0.9999f);
      const __m512 s = run(iters, _mm512_set1_ps(0.5f), [&](__m512 x) { return _mm512_fmadd_ps(a, x, b); });
      sink = _mm512_reduce_add_ps(s);
      return kFmaOps * kAcc * static_cast<double>(iters);
    }
    case PeakKind::Bf16Dot: {
      const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3F80), b = (__m512bh)_mm512_set1_epi16(0x3F80);
      const __m512 s = run(iters, _mm512_setzero_ps(), [&](__m512 x) { return _mm512_dpbf16_ps(x, a, b); });
      sink = _mm512_reduce_add_ps(s);
      return kBf16Ops * kAcc * static_cast<double>(iters);
    }
    case PeakKind::Int8Dot: {
      const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(1);
      const __m512i s = run(iters, _mm512_setzero_si512(), [&](__m512i x) { return _mm512_dpbusd_epi32(x, a, b); });
      sink = static_cast<float>(_mm512_reduce_add_epi32(s));
      return kInt8Ops * kAcc * static_cast<double>(iters);
    }
  }
  (void)sink;
  return 0.0;
}

}  // namespace ferrite::cpu
