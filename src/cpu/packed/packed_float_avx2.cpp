// AVX2 kernels for packed F16/BF16 weights (packed.h, packed_float.h). A
// 16-row group is taken as two halves of 8 rows; the 32 bytes of one half of
// a column-pair line are widened to f32 as two vectors whose lane pairs
// (2i, 2i+1) hold one row's two columns, multiplied by the token's pair of
// f32 activations broadcast as (x0, x1, x0, x1, ...), and the lane pairs are
// added at the end (vhaddps). Blocks of the weights (both halves) are
// widened once into a buffer that every token of the call then reads, three
// tokens at a time (twelve accumulator chains: FMA latency x throughput is
// eight), while the next block's lines are prefetched. Reading the
// activations for half a group at a time cost a third of the time on a
// Zen 3 (2048 x 2048 x 512, one thread: the f32 activations of a 64-token
// call, 512 KiB, came from L3 twice per group).
//   F16:  vcvtph2ps of each 16-byte quarter: rows 0-3 and rows 4-7. Each
//         lane sees the same fused multiply-adds in the same order as in the
//         AVX-512 kernel, so both levels give the same bits.
//   BF16: vpunpcklwd / vpunpckhwd with zeros: rows {0,1,4,5} and {2,3,6,7};
//         the bf16 products are exact in f32, so each lane is the plain f32
//         sum of its column's products (another order than vdpbf16ps's).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "cpu/packed/packed.h"
#include "cpu/packed/packed_float.h"
#include "cpu/packed/packed_matmul.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kLine = 64;  // bytes of one column pair of the group
constexpr int64_t kHalfRows = 8;
constexpr int kPrefetchBytes = 4096;
constexpr int64_t kChunk = 3;  // tokens per pass over a block of widened weights (12 accumulators)

// The two widened vectors of column pair j for one half.
struct F16Pairs {
  static void load(const uint8_t* line, __m256& a, __m256& b) {
    a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(line)));       // rows 0-3
    b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(line + 16)));  // rows 4-7
  }
  // [r0 r1 r2 r3 | r4 r5 r6 r7] from the pair sums [r0 r1 r4 r5 | r2 r3 r6 r7].
  static __m256 order(__m256 s) { return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), 0xD8)); }
};

struct Bf16Pairs {
  static void load(const uint8_t* line, __m256& a, __m256& b) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(line));
    a = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), w));  // rows 0, 1 | 4, 5
    b = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), w));  // rows 2, 3 | 6, 7
  }
  static __m256 order(__m256 s) { return s; }  // [r0 r1 r2 r3 | r4 r5 r6 r7] already
};

// Column pairs widened per pass, both halves: 16 rows x 2 x 128 f32 = 16 KiB,
// in L1 while every token of the call reads them.
constexpr int64_t kBlockPairs = 128;
constexpr int64_t kLinesPerPrefetch = kBlockPairs / 16;

// acc (4 vectors per token: half 0's pair sums a, b, then half 1's; in memory
// between blocks) += the block's widened weights w [n_pairs][4 vectors] times
// NT tokens' f32 activations, pair by pair. Each activation pair serves all
// 16 rows, so a call reads the activations once per group, not once per half.
template <int NT>
void block_tokens(const __m256* w, int64_t n_pairs, const float* act, int64_t k, __m256* acc) {
  __m256 s[NT][4];
  for (int t = 0; t < NT; ++t) {
    for (int v = 0; v < 4; ++v) s[t][v] = acc[4 * t + v];
  }
  for (int64_t j = 0; j < n_pairs; ++j) {
    for (int t = 0; t < NT; ++t) {
      double pair;
      std::memcpy(&pair, act + t * k + 2 * j, sizeof(pair));
      const __m256 x = _mm256_castpd_ps(_mm256_set1_pd(pair));  // x0 x1 x0 x1 ...
      for (int v = 0; v < 4; ++v) s[t][v] = _mm256_fmadd_ps(w[4 * j + v], x, s[t][v]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int v = 0; v < 4; ++v) acc[4 * t + v] = s[t][v];
  }
}

// One token (decode): both halves in one pass over the group's lines, the
// widened weights used straight from registers. Each lane's chain of fused
// multiply-adds is the one group_kernel runs (pair by pair from zero), so the
// bits are the same as in a batch.
template <typename Pairs>
void one_token(const uint8_t* group, const float* act, int64_t pairs, float* y) {
  __m256 a0 = _mm256_setzero_ps(), b0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps();
  for (int64_t j = 0; j < pairs; ++j) {
    const uint8_t* line = group + j * kLine;
    _mm_prefetch(reinterpret_cast<const char*>(line) + kPrefetchBytes, _MM_HINT_T0);
    double pair;
    std::memcpy(&pair, act + 2 * j, sizeof(pair));
    const __m256 x = _mm256_castpd_ps(_mm256_set1_pd(pair));  // x0 x1 x0 x1 ...
    __m256 w0, w1, w2, w3;
    Pairs::load(line, w0, w1);
    Pairs::load(line + kLine / 2, w2, w3);
    a0 = _mm256_fmadd_ps(w0, x, a0);
    b0 = _mm256_fmadd_ps(w1, x, b0);
    a1 = _mm256_fmadd_ps(w2, x, a1);
    b1 = _mm256_fmadd_ps(w3, x, b1);
  }
  _mm256_storeu_ps(y, Pairs::order(_mm256_hadd_ps(a0, b0)));
  _mm256_storeu_ps(y + kHalfRows, Pairs::order(_mm256_hadd_ps(a1, b1)));
}

template <typename Pairs>
void group_kernel(const uint8_t* group, const PackedFloatActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  using Fn = void (*)(const __m256*, int64_t, const float*, int64_t, __m256*);
  static constexpr Fn kFns[kChunk] = {block_tokens<1>, block_tokens<2>, block_tokens<3>};
  const float* act = (std::is_same_v<Pairs, F16Pairs> ? static_cast<const float*>(a.data) : a.wide) + t0 * a.k;
  const int64_t pairs = a.k / 2;
  if (nt == 1) {
    one_token<Pairs>(group, act, pairs, y);
    return;
  }
  alignas(32) __m256 w[4 * kBlockPairs];
  alignas(32) __m256 acc[4 * kPackFloatTokens];
  for (int64_t i = 0; i < 4 * nt; ++i) acc[i] = _mm256_setzero_ps();
  for (int64_t j0 = 0; j0 < pairs; j0 += kBlockPairs) {
    const int64_t n = pairs - j0 < kBlockPairs ? pairs - j0 : kBlockPairs;
    for (int64_t j = 0; j < n; ++j) {
      const uint8_t* line = group + (j0 + j) * kLine;
      Pairs::load(line, w[4 * j], w[4 * j + 1]);
      Pairs::load(line + kLine / 2, w[4 * j + 2], w[4 * j + 3]);
    }
    // The next block's lines are fetched while this one is multiplied.
    const uint8_t* next = group + (j0 + kBlockPairs) * kLine;
    const int64_t next_lines = pairs - j0 - n < kBlockPairs ? pairs - j0 - n : kBlockPairs;
    int64_t fetched = 0;
    for (int64_t t = 0; t < nt; t += kChunk) {
      const int64_t c = nt - t < kChunk ? nt - t : kChunk;
      kFns[c - 1](w, n, act + t * a.k + 2 * j0, a.k, acc + 4 * t);
      const int64_t upto = t + kChunk >= nt ? next_lines : std::min(next_lines, fetched + kLinesPerPrefetch);
      for (; fetched < upto; ++fetched) _mm_prefetch(reinterpret_cast<const char*>(next + fetched * kLine), _MM_HINT_T0);
    }
  }
  for (int64_t t = 0; t < nt; ++t) {
    const __m256* s = acc + 4 * t;
    _mm256_storeu_ps(y + t * ys, Pairs::order(_mm256_hadd_ps(s[0], s[1])));
    _mm256_storeu_ps(y + t * ys + kHalfRows, Pairs::order(_mm256_hadd_ps(s[2], s[3])));
  }
}

}  // namespace

PackedFloatKernel packed_float_kernel_avx2(TensorType type) {
  switch (type) {
    case TensorType::BF16:
      return group_kernel<Bf16Pairs>;
    case TensorType::F16:
      return group_kernel<F16Pairs>;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
