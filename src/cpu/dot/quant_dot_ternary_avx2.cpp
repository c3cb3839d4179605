// AVX2 products of the ternary weights (TQ1_0, TQ2_0) with Q8_K activations
// (the reference and the layouts: quant_dot_ternary_ref.cpp). Each block is
// decoded to trits 0..2 as unsigned bytes in activation order; the sum
// u.a - sum(a) (the -1 through the activations' 16-sums) stays in int16
// lanes until the end (|lane| <= 8 * 2 * 3 * 127 + 16 * 127 < 2^15).
//
// TQ1_0's trit n of byte q is floor(3 ((q 3^n) mod 256) / 256), formed in
// 16-bit lanes: vpmullw gives (q 3^n) mod 256 in the low byte of each lane
// (for the high byte: with the low byte cleared first, in the high byte),
// and vpmulhuw by 768 (low byte) or 3 (high byte) the top of the product.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "cpu/dot/quant_dot_iq.h"
#include "cpu/dot/quant_dot_k.h"
#include "cpu/dot/quant_tile_avx2.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using avx2::kVecs;
using avx2::load256;
using quant::BlockQ8_K;
using quant::BlockTQ1_0;
using quant::BlockTQ2_0;

// Trits of every byte of x for the multipliers 3^n in `pow3` (one per 16-bit lane).
inline __m256i trits(__m256i x, __m256i pow3) {
  const __m256i low_byte = _mm256_set1_epi16(0x00FF);
  const __m256i even = _mm256_and_si256(_mm256_mullo_epi16(x, pow3), low_byte);
  const __m256i odd = _mm256_mullo_epi16(_mm256_andnot_si256(low_byte, x), pow3);
  const __m256i t_even = _mm256_mulhi_epu16(even, _mm256_set1_epi16(3 * 256));
  const __m256i t_odd = _mm256_mulhi_epu16(odd, _mm256_set1_epi16(3));
  return _mm256_or_si256(t_even, _mm256_slli_epi16(t_odd, 8));
}

inline __m256i pow3(int lo, int hi) { return avx2::lane_scales(lo, hi); }

// The decoded block: trits u (0..2; TQ2_0 raw 2-bit values 0..3).
struct Trits {
  __m256i u[kVecs];
  float d;

  int32_t sum(const BlockQ8_K& a) const {
    __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(u[v], load256(a.qs + 32 * v)));
    acc = _mm256_sub_epi16(acc, load256(a.bsums));
    return avx2::hsum_epi32(_mm256_madd_epi16(acc, _mm256_set1_epi16(1)));
  }
};

struct TQ10 : Trits {
  using Block = BlockTQ1_0;
  static constexpr float kScale = 1.0f;
  void decode(const Block& w) {
    constexpr int kWide = 32;
    const __m256i wide = load256(w.qs);
    int p = 1;
#pragma GCC unroll 5
    for (int n = 0; n < 5; ++n, p *= 3) u[n] = trits(wide, _mm256_set1_epi16(static_cast<int16_t>(p)));
    // qs[32..47] twice, then with qh[0..3] (repeated four times, trits 0..3
    // of each in turn) as the high half of the last vector.
    const __m128i narrow = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs + kWide));
    uint32_t qh;
    std::memcpy(&qh, w.qh, sizeof qh);
    const __m256i twice = _mm256_set_m128i(narrow, narrow);
    u[5] = trits(twice, pow3(1, 3));
    u[6] = trits(twice, pow3(9, 27));
    const __m256i tail = _mm256_set_m128i(_mm_set1_epi32(static_cast<int>(qh)), narrow);
    u[7] = trits(tail, _mm256_setr_epi16(81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27));
    d = _cvtsh_ss(w.d);
  }
};

struct TQ20 : Trits {
  using Block = BlockTQ2_0;
  static constexpr float kScale = 1.0f;
  void decode(const Block& w) {
    const __m256i m2 = _mm256_set1_epi8(3);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const __m256i raw = load256(w.qs + 32 * h);
#pragma GCC unroll 4
      for (int l = 0; l < 4; ++l) u[4 * h + l] = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * l), m2);
    }
    d = _cvtsh_ss(w.d);
  }
};

}  // namespace

const QuantDot* quant_dot_ternary_avx2(TensorType type) {
  const QuantDot& q8_k = *quant_dot_k_avx2(TensorType::Q4_K);
  static const QuantDot tq1_0 = avx2::with_kernel<TQ10>(q8_k), tq2_0 = avx2::with_kernel<TQ20>(q8_k);
  switch (type) {
    case TensorType::TQ1_0:
      return &tq1_0;
    case TensorType::TQ2_0:
      return &tq2_0;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
