// Peak-throughput loops at the AVX-512 level (see hw_limits.h): 16
// independent accumulators, enough to cover every unit's latency. The
// instructions are written out in asm on accumulators that are plain local
// variables (register operands): with intrinsics on an accumulator array,
// GCC kept the array on the stack, and the store-to-load round trip in
// every chain halved the measured peak (the f16 kernel then ran at 180% of
// "peak" on a Zen 5).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "cpu/hw_limits.h"

namespace ferrite::cpu {
namespace {

constexpr int kAcc = 16;
constexpr double kFmaOps = 2.0 * 16;   // 16 f32 lanes, multiply + add
constexpr double kBf16Ops = 2.0 * 32;  // 32 bf16 pairs
constexpr double kInt8Ops = 2.0 * 64;  // 64 u8 x s8 products

// INSN a, b, acc on eight accumulators (AT&T operand order: acc op= b x a).
// Two statements per step: GCC takes at most 30 asm operands, and an
// in-out operand counts twice.
#define FERRITE_PEAK8(INSN, c0, c1, c2, c3, c4, c5, c6, c7)                                                  \
  asm volatile(INSN " %[a], %[b], %[r0]\n\t" INSN " %[a], %[b], %[r1]\n\t" INSN " %[a], %[b], %[r2]\n\t" INSN \
                    " %[a], %[b], %[r3]\n\t" INSN " %[a], %[b], %[r4]\n\t" INSN " %[a], %[b], %[r5]\n\t" INSN \
                    " %[a], %[b], %[r6]\n\t" INSN " %[a], %[b], %[r7]"                                        \
               : [r0] "+v"(c0), [r1] "+v"(c1), [r2] "+v"(c2), [r3] "+v"(c3), [r4] "+v"(c4), [r5] "+v"(c5),    \
                 [r6] "+v"(c6), [r7] "+v"(c7)                                                                 \
               : [a] "v"(a), [b] "v"(b))

// A function running `iters` steps of the 16 chains and returning their sum
// (so no chain is dead).
#define FERRITE_PEAK_LOOP(NAME, INSN, V, ADD)                                          \
  V NAME(long iters, V a, V b, V init) {                                               \
    V c0 = init, c1 = init, c2 = init, c3 = init, c4 = init, c5 = init, c6 = init;    \
    V c7 = init, c8 = init, c9 = init, c10 = init, c11 = init, c12 = init;            \
    V c13 = init, c14 = init, c15 = init;                                              \
    for (long i = 0; i < iters; ++i) {                                                 \
      FERRITE_PEAK8(INSN, c0, c1, c2, c3, c4, c5, c6, c7);                             \
      FERRITE_PEAK8(INSN, c8, c9, c10, c11, c12, c13, c14, c15);                       \
    }                                                                                  \
    const V s0 = ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7)));    \
    const V s1 = ADD(ADD(ADD(c8, c9), ADD(c10, c11)), ADD(ADD(c12, c13), ADD(c14, c15))); \
    return ADD(s0, s1);                                                                \
  }

FERRITE_PEAK_LOOP(fma_loop, "vfmadd231ps", __m512, _mm512_add_ps)
FERRITE_PEAK_LOOP(bf16_loop, "vdpbf16ps", __m512, _mm512_add_ps)
FERRITE_PEAK_LOOP(int8_loop, "vpdpbusd", __m512i, _mm512_add_epi32)

#undef FERRITE_PEAK_LOOP
#undef FERRITE_PEAK8

}  // namespace

uint64_t read_sum_avx512(const uint64_t* p, size_t n) {
  constexpr size_t kPerLoad = sizeof(__m512i) / sizeof(uint64_t);
  constexpr size_t kStep = 4 * kPerLoad;  // four loads (independent sums) per step
  __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    s0 = _mm512_add_epi64(s0, _mm512_loadu_si512(p + i));
    s1 = _mm512_add_epi64(s1, _mm512_loadu_si512(p + i + kPerLoad));
    s2 = _mm512_add_epi64(s2, _mm512_loadu_si512(p + i + 2 * kPerLoad));
    s3 = _mm512_add_epi64(s3, _mm512_loadu_si512(p + i + 3 * kPerLoad));
  }
  uint64_t sum = static_cast<uint64_t>(
      _mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3))));
  for (; i < n; ++i) sum += p[i];
  return sum;
}

double peak_loop_avx512(PeakKind k, long iters) {
  volatile float sink = 0.0f;
  switch (k) {
    case PeakKind::F32Fma: {
      const __m512 v = _mm512_set1_ps(1e-3f);
      sink = _mm512_reduce_add_ps(fma_loop(iters, v, v, _mm512_set1_ps(0.5f)));
      return kFmaOps * kAcc * static_cast<double>(iters);
    }
    case PeakKind::Bf16Dot: {
      const __m512 one = _mm512_castsi512_ps(_mm512_set1_epi16(0x3F80));  // bf16 1.0 pairs
      sink = _mm512_reduce_add_ps(bf16_loop(iters, one, one, _mm512_setzero_ps()));
      return kBf16Ops * kAcc * static_cast<double>(iters);
    }
    case PeakKind::Int8Dot: {
      const __m512i v = _mm512_set1_epi8(1);
      sink = static_cast<float>(_mm512_reduce_add_epi32(int8_loop(iters, v, v, _mm512_setzero_si512())));
      return kInt8Ops * kAcc * static_cast<double>(iters);
    }
  }
  (void)sink;
  return 0.0;
}

}  // namespace ferrite::cpu
