// Peak-throughput loops at the AVX2 level (see hw_limits.h). Without VNNI
// the 8-bit dot is vpmaddubsw + vpmaddwd + vpaddd (32 products per step);
// there is no bf16 dot product at this level. As at the AVX-512 level, the
// instructions are written out in asm on local accumulators: with
// intrinsics GCC kept an accumulator array on the stack, and it hoisted the
// loop-invariant multiplies of the 8-bit step out of the loop.
#include <immintrin.h>

#include "cpu/hw_limits.h"

namespace ferrite::cpu {
namespace {

constexpr int kFmaAcc = 12;
constexpr int kInt8Acc = 4;
constexpr double kFmaOps = 2.0 * 8;    // 8 f32 lanes, multiply + add
constexpr double kInt8Ops = 2.0 * 32;  // 32 u8 x s8 products

#define FERRITE_FMA6(c0, c1, c2, c3, c4, c5)                                                                     \
  asm volatile("vfmadd231ps %[a], %[b], %[r0]\n\tvfmadd231ps %[a], %[b], %[r1]\n\tvfmadd231ps %[a], %[b], %[r2]\n\t" \
               "vfmadd231ps %[a], %[b], %[r3]\n\tvfmadd231ps %[a], %[b], %[r4]\n\tvfmadd231ps %[a], %[b], %[r5]"    \
               : [r0] "+x"(c0), [r1] "+x"(c1), [r2] "+x"(c2), [r3] "+x"(c3), [r4] "+x"(c4), [r5] "+x"(c5)           \
               : [a] "x"(a), [b] "x"(b))

__m256 fma_loop(long iters, __m256 a, __m256 b, __m256 init) {
  __m256 c0 = init, c1 = init, c2 = init, c3 = init, c4 = init, c5 = init;
  __m256 c6 = init, c7 = init, c8 = init, c9 = init, c10 = init, c11 = init;
  for (long i = 0; i < iters; ++i) {
    FERRITE_FMA6(c0, c1, c2, c3, c4, c5);
    FERRITE_FMA6(c6, c7, c8, c9, c10, c11);
  }
  const __m256 s0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)), _mm256_add_ps(c4, c5));
  const __m256 s1 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c6, c7), _mm256_add_ps(c8, c9)), _mm256_add_ps(c10, c11));
  return _mm256_add_ps(s0, s1);
}

#undef FERRITE_FMA6

// Four chains of t = maddubs(a, b); t = madd(t, ones); acc += t.
__m256i int8_loop(long iters, __m256i a, __m256i b, __m256i ones) {
  __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
  for (long i = 0; i < iters; ++i) {
    __m256i t0, t1, t2, t3;
    asm volatile(
        "vpmaddubsw %[b], %[a], %[t0]\n\tvpmaddubsw %[b], %[a], %[t1]\n\t"
        "vpmaddubsw %[b], %[a], %[t2]\n\tvpmaddubsw %[b], %[a], %[t3]\n\t"
        "vpmaddwd %[o], %[t0], %[t0]\n\tvpmaddwd %[o], %[t1], %[t1]\n\t"
        "vpmaddwd %[o], %[t2], %[t2]\n\tvpmaddwd %[o], %[t3], %[t3]\n\t"
        "vpaddd %[t0], %[c0], %[c0]\n\tvpaddd %[t1], %[c1], %[c1]\n\t"
        "vpaddd %[t2], %[c2], %[c2]\n\tvpaddd %[t3], %[c3], %[c3]"
        : [c0] "+x"(c0), [c1] "+x"(c1), [c2] "+x"(c2), [c3] "+x"(c3), [t0] "=&x"(t0), [t1] "=&x"(t1),
          [t2] "=&x"(t2), [t3] "=&x"(t3)
        : [a] "x"(a), [b] "x"(b), [o] "x"(ones));
  }
  return _mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3));
}

}  // namespace

uint64_t read_sum_avx2(const uint64_t* p, size_t n) {
  constexpr size_t kPerLoad = sizeof(__m256i) / sizeof(uint64_t);
  constexpr size_t kStep = 4 * kPerLoad;  // four loads (independent sums) per step
  __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    s0 = _mm256_add_epi64(s0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    s1 = _mm256_add_epi64(s1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + kPerLoad)));
    s2 = _mm256_add_epi64(s2, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 2 * kPerLoad)));
    s3 = _mm256_add_epi64(s3, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 3 * kPerLoad)));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
  uint64_t sum = static_cast<uint64_t>(_mm256_extract_epi64(s, 0)) + static_cast<uint64_t>(_mm256_extract_epi64(s, 1)) +
                 static_cast<uint64_t>(_mm256_extract_epi64(s, 2)) + static_cast<uint64_t>(_mm256_extract_epi64(s, 3));
  for (; i < n; ++i) sum += p[i];
  return sum;
}

double peak_loop_avx2(PeakKind k, long iters) {
  volatile float sink = 0.0f;
  switch (k) {
    case PeakKind::F32Fma: {
      const __m256 v = _mm256_set1_ps(1e-3f);
      sink = _mm256_cvtss_f32(fma_loop(iters, v, v, _mm256_set1_ps(0.5f)));
      return kFmaOps * kFmaAcc * static_cast<double>(iters);
    }
    case PeakKind::Int8Dot: {
      const __m256i v = _mm256_set1_epi8(1);
      sink = static_cast<float>(_mm256_extract_epi32(int8_loop(iters, v, v, _mm256_set1_epi16(1)), 0));
      return kInt8Ops * kInt8Acc * static_cast<double>(iters);
    }
    case PeakKind::Bf16Dot:
      break;
  }
  (void)sink;
  return 0.0;
}

}  // namespace ferrite::cpu
