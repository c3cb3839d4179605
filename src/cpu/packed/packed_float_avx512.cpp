// AVX-512 kernels for packed F16/BF16 weights (packed.h, packed_float.h).
// One 64-byte load holds a pair of columns of 16 rows.
//   BF16: vdpbf16ps with the token's broadcast bf16 pair: 16 rows' sums; the
//         pair kernel takes two adjacent groups, one broadcast for both.
//   F16:  the load converted to f32 as two halves (rows 0-7, rows 8-15, each
//         lane pair one row's two columns), times the token's f32 pair
//         broadcast; the lane pairs are added at the end. Decode takes two
//         adjacent groups per call (four chains; each lane's order, so its
//         bits, unchanged).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "cpu/packed/packed.h"
#include "cpu/packed/packed_float.h"
#include "cpu/packed/packed_matmul.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kLine = 64;  // bytes of one column pair of the group
constexpr int kPrefetchBytes = 2048;

// G adjacent 16-row groups (the next one kPackRows * k bf16 values on) times
// NT tokens: each broadcast activation pair feeds G vdpbf16ps. With G = 1 a
// 64-byte line load and a broadcast load come with every vdpbf16ps of an
// 8-token tile, and the loads held Zen 5 to ~75% of its two vdpbf16ps per
// cycle; G = 2 takes 5 loads per 8 of them.
template <int NT, int G>
void bf16_groups(const uint8_t* group, const PackedFloatActs& a, int64_t t0, float* y, int64_t ys) {
  // Independent chains (vdpbf16ps: ~6 cycles' latency, 2 per cycle, so ~12 in
  // flight keep both units busy): G x NT x kChains accumulators, 10-16 for
  // 5-8 tokens, 4-16 for 1-4.
  constexpr int kChains = (NT <= 4 ? 4 : 2) / G;
  __m512 acc[kChains][G][NT];
  for (auto& c : acc) {
    for (auto& g : c) {
      for (auto& v : g) v = _mm512_setzero_ps();
    }
  }
  const auto* act = static_cast<const uint16_t*>(a.data) + t0 * a.k;
  const int64_t pairs = a.k / 2;
  const int64_t group_bytes = pairs * kLine;
  for (int64_t j = 0; j < pairs; j += kChains) {
    for (int c = 0; c < kChains; ++c) {
      __m512bh w[G];
      for (int g = 0; g < G; ++g) {
        const uint8_t* line = group + g * group_bytes + (j + c) * kLine;
        _mm_prefetch(reinterpret_cast<const char*>(line) + kPrefetchBytes, _MM_HINT_T0);
        w[g] = (__m512bh)_mm512_loadu_si512(line);
      }
      for (int t = 0; t < NT; ++t) {
        int32_t pair;
        std::memcpy(&pair, act + t * a.k + 2 * (j + c), sizeof(pair));
        const __m512bh x = (__m512bh)_mm512_set1_epi32(pair);
        for (int g = 0; g < G; ++g) acc[c][g][t] = _mm512_dpbf16_ps(acc[c][g][t], w[g], x);
      }
    }
  }
  for (int g = 0; g < G; ++g) {
    for (int t = 0; t < NT; ++t) {
      __m512 sum = acc[0][g][t];
      for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c][g][t]);
      _mm512_storeu_ps(y + t * ys + g * kPackRows, sum);
    }
  }
}

// G adjacent 16-row groups times NT tokens. Each lane's chain of fused
// multiply-adds runs pair by pair from zero, as in the AVX2 kernel (the same
// bits at both levels); with G = 2 a one-token call has 4 independent
// chains instead of 2.
template <int NT, int G>
void f16_groups(const uint8_t* group, const PackedFloatActs& a, int64_t t0, float* y, int64_t ys) {
  __m512 lo[G][NT], hi[G][NT];
  for (int g = 0; g < G; ++g) {
    for (int t = 0; t < NT; ++t) lo[g][t] = hi[g][t] = _mm512_setzero_ps();
  }
  const auto* act = static_cast<const float*>(a.data) + t0 * a.k;
  const int64_t pairs = a.k / 2;
  const int64_t group_bytes = pairs * kLine;
  for (int64_t j = 0; j < pairs; ++j) {
    __m512 w_lo[G], w_hi[G];
    for (int g = 0; g < G; ++g) {
      const uint8_t* line = group + g * group_bytes + j * kLine;
      _mm_prefetch(reinterpret_cast<const char*>(line) + kPrefetchBytes, _MM_HINT_T0);
      w_lo[g] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(line)));
      w_hi[g] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(line + kLine / 2)));
    }
    for (int t = 0; t < NT; ++t) {
      double pair;
      std::memcpy(&pair, act + t * a.k + 2 * j, sizeof(pair));
      const __m512 x = _mm512_castpd_ps(_mm512_set1_pd(pair));  // x0 x1 x0 x1 ...
      for (int g = 0; g < G; ++g) {
        lo[g][t] = _mm512_fmadd_ps(w_lo[g], x, lo[g][t]);
        hi[g][t] = _mm512_fmadd_ps(w_hi[g], x, hi[g][t]);
      }
    }
  }
  // Row r's two columns sit in lanes 2r, 2r+1 of lo (r < 8) or hi (r >= 8).
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (int g = 0; g < G; ++g) {
    for (int t = 0; t < NT; ++t) {
      const __m512 s = _mm512_add_ps(_mm512_permutex2var_ps(lo[g][t], even, hi[g][t]),
                                     _mm512_permutex2var_ps(lo[g][t], odd, hi[g][t]));
      _mm512_storeu_ps(y + t * ys + g * kPackRows, s);
    }
  }
}

using GroupFn = void (*)(const uint8_t*, const PackedFloatActs&, int64_t, float*, int64_t);

template <template <int> class K>
void dispatch(const uint8_t* group, const PackedFloatActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  static const GroupFn table[kPackTokens] = {K<1>::run, K<2>::run, K<3>::run, K<4>::run,
                                             K<5>::run, K<6>::run, K<7>::run, K<8>::run};
  table[nt - 1](group, a, t0, y, ys);
}

template <int NT>
struct Bf16 {
  static void run(const uint8_t* g, const PackedFloatActs& a, int64_t t0, float* y, int64_t ys) {
    bf16_groups<NT, 1>(g, a, t0, y, ys);
  }
};
template <int NT>
struct Bf16Pair {
  static void run(const uint8_t* g, const PackedFloatActs& a, int64_t t0, float* y, int64_t ys) {
    bf16_groups<NT, 2>(g, a, t0, y, ys);
  }
};
template <int NT>
struct F16 {
  static void run(const uint8_t* g, const PackedFloatActs& a, int64_t t0, float* y, int64_t ys) {
    f16_groups<NT, 1>(g, a, t0, y, ys);
  }
};
template <int NT>
struct F16Pair {
  static void run(const uint8_t* g, const PackedFloatActs& a, int64_t t0, float* y, int64_t ys) {
    f16_groups<NT, 2>(g, a, t0, y, ys);
  }
};

}  // namespace

PackedFloatKernel packed_float_kernel_avx512(TensorType type) {
  switch (type) {
    case TensorType::BF16:
      return dispatch<Bf16>;
    case TensorType::F16:
      return dispatch<F16>;
    default:
      return nullptr;
  }
}

PackedFloatKernel packed_float_pair_kernel_avx512(TensorType type) {
  switch (type) {
    case TensorType::BF16:
      return dispatch<Bf16Pair>;
    case TensorType::F16:
      return dispatch<F16Pair>;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
