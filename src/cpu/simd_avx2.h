// Small AVX2 helpers shared by the *_avx2.cpp kernels (include only from
// files compiled with the AVX2 flags).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ferrite::cpu::avx2 {

// Four bytes broadcast to every 32-bit lane (a load, no shuffle).
inline __m256i bcast32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm256_set1_epi32(v);
}

// Part i of kParts of the 64-byte lines of one kBytes block at `block`,
// prefetched into L1: a kernel calls it once per step of its block loop with
// block = the current block plus its prefetch distance, so every line of the
// stream is requested ahead, spread evenly over the loop. The packed AVX2
// kernels fetch 4 KiB ahead: at 2 KiB (and with only the nibble lines of
// Q4_K/Q5_K) a one-token product waited on memory, then computed, with little
// overlap (Zen 5, AVX2 cap, 2 threads, 1B tg64 in 3 interleaved rounds:
// Q5_K_M 28-30 -> 37-41 t/s, Q6_K 24-29 -> 36, Q4_0 46-63 -> 54-72).
template <int64_t kBytes, int kParts>
inline void prefetch_part(const uint8_t* block, int i) {
  constexpr int64_t kLines = (kBytes + 63) / 64;
  constexpr int64_t kPer = (kLines + kParts - 1) / kParts;
  for (int64_t l = i * kPer; l < (i + 1) * kPer && l < kLines; ++l) {
    _mm_prefetch(reinterpret_cast<const char*>(block + l * 64), _MM_HINT_T0);
  }
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Eight f16 values widened to f32.
inline __m256 load8_f16(const void* p) { return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p))); }

// Signed bytes of 8 rows (half 0: rows 0-7 of `rows16`'s 16, half 1: rows
// 8-15), each in both int16 halves of its row's lane (a sub-block's scales as
// a vpmaddwd factor): the 16 bytes in both 128-bit lanes, each row's byte put
// in the high byte of two int16s by vpshufb, then shifted down with its sign.
// (packed_k_avx2.cpp's sub_block_scales is the unsigned 6-bit twin.)
inline __m256i twice_scales(const void* rows16, int64_t half) {
  const auto lane = [&](int j) { return static_cast<int>(0x00800080u | static_cast<uint32_t>(8 * half + j) * 0x01000100u); };
  const __m256i pick = _mm256_setr_epi32(lane(0), lane(1), lane(2), lane(3), lane(4), lane(5), lane(6), lane(7));
  const __m256i rows = _mm256_broadcastsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(rows16)));
  return _mm256_srai_epi16(_mm256_shuffle_epi8(rows, pick), 8);
}

// A value the compiler must compute as written: keeps a rounded product out
// of a fused multiply-add (these files are compiled with FMA; the references
// round each product).
inline __m256 pinned(__m256 v) {
  asm("" : "+x"(v));
  return v;
}
inline __m128 pinned(__m128 v) {
  asm("" : "+x"(v));
  return v;
}

// An accumulator settled in its register where it is updated. In the fully
// unrolled K-quant blocks GCC otherwise defers the additions: it parked
// each token's products on the stack (119 spill stores per super-block of
// packed Q4_K at 8 tokens, 285 for Q6_K) to add them at the end. It does so
// for one token too (IQ4_XS: 128 stores per super-block of 16 rows), but
// whether the barrier pays there depends on the kernel: one-token Q6_K and
// IQ4_XS gain 6-13% with it (lab, 1 thread, AVX2 cap, Zen 5 and the device
// Xeon), while Q4_K lost 14% in decode on Zen 3 (1B Q4_K_M tg64, 6
// interleaved runs: 16.1-17.0 t/s with, 18.0-19.7 without) and 5% in the
// Xeon's lab (Zen 5's gained 4%), and Q5_K 4% in Zen 5's: those two settle
// only for several tokens.
inline void settle(__m256i& acc) { asm("" : "+x"(acc)); }

// Values the compiler keeps in memory from here on (each use a load), so
// that the registers stay with the accumulators.
template <typename T>
inline void in_memory(T& v) {
  asm("" : "+m"(v));
}

}  // namespace ferrite::cpu::avx2
