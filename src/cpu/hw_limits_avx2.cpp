// Peak-throughput loops at the AVX2 level (see hw_limits.h). Without VNNI
// the 8-bit dot is vpmaddubsw + vpmaddwd + vpaddd (32 products per step);
// there is no bf16 dot product at this level.
#include <immintrin.h>

#include "cpu/hw_limits.h"

namespace ferrite::cpu {
namespace {

constexpr int kAcc = 12;
constexpr double kFmaOps = 2.0 * 8;   // 8 f32 lanes, multiply + add
constexpr double kInt8Ops = 2.0 * 32;  // 32 u8 x s8 products

template <typename V, typename Step>
V run(long iters, V init, Step step) {
  V acc[kAcc];
  for (int j = 0; j < kAcc; ++j) acc[j] = init;
  for (long i = 0; i < iters; ++i) {
    for (int j = 0; j < kAcc; ++j) acc[j] = step(acc[j]);
    for (int j = 0; j < kAcc; ++j) asm volatile("" : "+x"(acc[j]));
  }
  V s = acc[0];
  for (int j = 1; j < kAcc; ++j) s = step(s);
  return s;
}

}  // namespace

double peak_loop_avx2(PeakKind k, long iters) {
  volatile float sink = 0.0f;
  switch (k) {
    case PeakKind::F32Fma: {
      const __m256 a = _mm256_set1_ps(1.0001f), b = _mm256_set1_ps(0.9999f);
      const __m256 s = run(iters, _mm256_set1_ps(0.5f), [&](__m256 x) { return _mm256_fmadd_ps(a, x, b); });
      sink = _mm256_cvtss_f32(s);
      return kFmaOps * kAcc * static_cast<double>(iters);
    }
    case PeakKind::Int8Dot: {
      const __m256i a = _mm256_set1_epi8(1), b = _mm256_set1_epi8(1), ones = _mm256_set1_epi16(1);
      const __m256i s = run(iters, _mm256_setzero_si256(), [&](__m256i x) {
        return _mm256_add_epi32(x, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
      });
      sink = static_cast<float>(_mm256_extract_epi32(s, 0));
      return kInt8Ops * kAcc * static_cast<double>(iters);
    }
    case PeakKind::Bf16Dot:
      break;
  }
  (void)sink;
  return 0.0;
}

}  // namespace ferrite::cpu
