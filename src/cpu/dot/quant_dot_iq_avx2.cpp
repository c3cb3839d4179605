// AVX2 products of the IQ2 (XXS, XS, S), IQ3 (XXS, S) and IQ4_XS weights
// with Q8_K activations (the reference: quant_dot_iq_ref.cpp). Each block
// decodes into magnitudes, signs and scales one 32-value vector at a time
// (avx2::SignedVecs): the grid entries of a vector gathered by scalar loads;
// the signs as +1 / -1 bytes, spread from sign bytes that a block computes
// once from its 7-bit sign indices (the eighth sign is the parity) or reads
// (explicit sign bytes); the odd scales 2 s + 1 (IQ4_XS: ls - 32) one per 16
// values; the integer sum is then vpsignb / vpmaddubsw / vpmaddwd per vector
// (every pair sum below 2^15: magnitudes <= 127, |a| <= 127).
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "cpu/dot/quant_dot_iq.h"
#include "cpu/dot/quant_dot_k.h"
#include "cpu/dot/quant_tile_avx2.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using avx2::kVecs;
using avx2::SignedScaled;
using avx2::SignedVecs;
using quant::BlockIQ2_S;
using quant::BlockIQ2_XS;
using quant::BlockIQ2_XXS;
using quant::BlockIQ3_S;
using quant::BlockIQ3_XXS;
using quant::BlockIQ4_XS;
using quant::kQKK;

inline int16_t odd(uint32_t s) { return static_cast<int16_t>(2 * s + 1); }

// The largest grid magnitude of each type: the offset that makes every
// signed value non-negative in a panel (avx2::SignedScaled::to_offset).
constexpr int kIq2Max = 43, kIq3xxsMax = 62, kIq3sMax = 15;

// Per block: the 32 sign bytes (avx2::sign_bytes_with_parity) of its 7-bit
// sign indices and, per vector, its scale pair (one int32 holding the int16
// scale of values 32v..32v+15 in its low half and of the next 16 in its high
// half; both halves equal for the types with one scale per 32).
struct SignsAndScales {
  alignas(32) uint8_t signs[32];
  alignas(32) int32_t scales[kVecs];

  void set_signs(__m256i index7) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(signs), avx2::sign_bytes_with_parity(index7));
  }
  // The 4-bit scale fields of `words` (bits 28..31 of each int32) as 2 s + 1.
  void set_top_nibble_scales(__m256i words) {
    const __m256i sc = _mm256_or_si256(_mm256_slli_epi32(_mm256_srli_epi32(words, 28), 1), _mm256_set1_epi32(1));
    _mm256_store_si256(reinterpret_cast<__m256i*>(scales), _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)));
  }
  // Eight scale bytes (low nibble: values 32v..32v+15, high nibble: the
  // next 16) as 2 s + 1.
  void set_nibble_scales(const uint8_t* packed) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(bytes, low4), _mm_and_si128(_mm_srli_epi16(bytes, 4), low4));
    const __m128i odd_nib = _mm_or_si128(_mm_add_epi8(nib, nib), _mm_set1_epi8(1));
    _mm256_store_si256(reinterpret_cast<__m256i*>(scales), _mm256_cvtepu8_epi16(odd_nib));
  }
  // Vector v's 32 +1 / -1 sign bytes.
  __m256i sign(int v) const { return avx2::signs_of_bytes(signs + 4 * v); }
  // Vector v's scale when both halves share it (set_top_nibble_scales): a
  // broadcast load, no shuffle.
  __m256i uniform_scale(int v) const { return _mm256_set1_epi32(scales[v]); }
  // Vector v's scales, avx2::lane_scales's layout.
  __m256i scale(int v) const {
    const __m256i pair = _mm256_set1_epi32(scales[v]);
    return _mm256_shuffle_epi8(pair, _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                                      2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3));
  }
};

// The four 7-bit sign indices of each int32 of `words` (bits 0-6, 7-13,
// 14-20, 21-27) one per byte.
inline __m256i seven_bit_fields(__m256i words) {
  __m256i idx = _mm256_and_si256(words, _mm256_set1_epi32(0x7F));
  idx = _mm256_or_si256(idx, _mm256_and_si256(_mm256_slli_epi32(words, 1), _mm256_set1_epi32(0x7F00)));
  idx = _mm256_or_si256(idx, _mm256_and_si256(_mm256_slli_epi32(words, 2), _mm256_set1_epi32(0x7F0000)));
  return _mm256_or_si256(idx, _mm256_and_si256(_mm256_slli_epi32(words, 3), _mm256_set1_epi32(0x7F000000)));
}

// IQ2_XXS: per vector, four grid index bytes then a word of four 7-bit sign
// indices and the 4-bit scale.
struct IQ2XXS : SignedVecs<IQ2XXS, BlockIQ2_XXS> {
  static constexpr float kScale = 0.125f;
  static constexpr int kOffset = kIq2Max;
  using Pre = SignsAndScales;
  static void prepare(const Block& w, Pre& p) {
    const __m256 lo = _mm256_castsi256_ps(avx2::load256(w.qs)), hi = _mm256_castsi256_ps(avx2::load256(w.qs + 16));
    // The odd int32s (the sign-and-scale words): lanes [v0 v1 v4 v5 | v2 v3 v6 v7], then in order.
    const __m256i mixed = _mm256_castps_si256(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m256i words = _mm256_permute4x64_epi64(mixed, _MM_SHUFFLE(3, 1, 2, 0));
    p.set_signs(seven_bit_fields(words));
    p.set_top_nibble_scales(words);
  }
  static void vec(const Block& w, const Pre& p, int v, __m256i& u, __m256i& s, __m256i& sv) {
    const auto* q = reinterpret_cast<const uint8_t*>(w.qs) + 8 * v;
    u = avx2::gather64(quant::kIq2xxsGrid.data(), q[0], q[1], q[2], q[3]);
    s = p.sign(v);
    sv = p.uniform_scale(v);
  }
};

// IQ2_XS: per 8 values a 9-bit grid index and a 7-bit sign index.
struct IQ2XS : SignedVecs<IQ2XS, BlockIQ2_XS> {
  static constexpr float kScale = 0.125f;
  static constexpr int kOffset = kIq2Max;
  using Pre = SignsAndScales;
  static void prepare(const Block& w, Pre& p) {
    const __m256i lo = _mm256_srli_epi16(avx2::load256(w.qs), 9), hi = _mm256_srli_epi16(avx2::load256(w.qs + 16), 9);
    p.set_signs(_mm256_permute4x64_epi64(_mm256_packus_epi16(lo, hi), _MM_SHUFFLE(3, 1, 2, 0)));
    p.set_nibble_scales(w.scales);
  }
  static void vec(const Block& w, const Pre& p, int v, __m256i& u, __m256i& s, __m256i& sv) {
    const uint16_t* q = w.qs + 4 * v;
    u = avx2::gather64(quant::kIq2xsGrid.data(), q[0] & 0x1FF, q[1] & 0x1FF, q[2] & 0x1FF, q[3] & 0x1FF);
    s = p.sign(v);
    sv = p.scale(v);
  }
};

// IQ2_S: 10-bit grid indices (8 bits in qs, bits 2j, 2j + 1 of qh[v] on top
// for index 4v + j), explicit sign bytes. A block's 32 indices are built once,
// 16 per vector step (qh bytes spread to their indices' words, moved up by a
// multiply), instead of with three scalar operations each.
struct IQ2S : SignedVecs<IQ2S, BlockIQ2_S> {
  static constexpr float kScale = 0.125f;
  static constexpr int kOffset = kIq2Max;
  struct Pre : SignsAndScales {
    alignas(32) uint16_t idx[kQKK / 8];
  };
  static void prepare(const Block& w, Pre& p) {
    p.set_nibble_scales(w.scales);
    // Word 4k + j takes qh byte k shifted left by 8 - 2j: its bits 2j, 2j + 1 land on 8, 9.
    const __m256i shift = _mm256_setr_epi16(256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4, 256, 64, 16, 4);
    const __m256i spread = _mm256_setr_epi8(0, -1, 0, -1, 0, -1, 0, -1, 1, -1, 1, -1, 1, -1, 1, -1,  //
                                            2, -1, 2, -1, 2, -1, 2, -1, 3, -1, 3, -1, 3, -1, 3, -1);
    const __m256i top2 = _mm256_set1_epi16(0x300);
#pragma GCC unroll 2
    for (int i = 0; i < kQKK / 8; i += 16) {
      const __m256i low8 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs + i)));
      int32_t four;
      std::memcpy(&four, w.qh + i / 4, sizeof four);
      const __m256i h = _mm256_shuffle_epi8(_mm256_set1_epi32(four), spread);
      const __m256i high = _mm256_and_si256(_mm256_mullo_epi16(h, shift), top2);
      _mm256_store_si256(reinterpret_cast<__m256i*>(p.idx + i), _mm256_or_si256(low8, high));
    }
  }
  static void vec(const Block& w, const Pre& p, int v, __m256i& u, __m256i& s, __m256i& sv) {
    const uint16_t* i = p.idx + 4 * v;
    u = avx2::gather64(quant::kIq2sGrid.data(), i[0], i[1], i[2], i[3]);
    s = avx2::signs_of_bytes(w.qs + kQKK / 8 + 4 * v);
    sv = p.scale(v);
  }
};

// IQ3_XXS: eight grid index bytes per vector, then the eight sign-and-scale
// words as IQ2_XXS's.
struct IQ3XXS : SignedVecs<IQ3XXS, BlockIQ3_XXS> {
  static constexpr float kScale = 0.25f;
  static constexpr int kOffset = kIq3xxsMax;
  using Pre = SignsAndScales;
  static void prepare(const Block& w, Pre& p) {
    const __m256i words = avx2::load256(w.qs + kQKK / 4);
    p.set_signs(seven_bit_fields(words));
    p.set_top_nibble_scales(words);
  }
  static void vec(const Block& w, const Pre& p, int v, __m256i& u, __m256i& s, __m256i& sv) {
    const auto& g = quant::kIq3xxsGrid;
    const uint8_t* q = w.qs + 8 * v;
    u = _mm256_setr_epi32(static_cast<int>(g[q[0]]), static_cast<int>(g[q[1]]), static_cast<int>(g[q[2]]),
                          static_cast<int>(g[q[3]]), static_cast<int>(g[q[4]]), static_cast<int>(g[q[5]]),
                          static_cast<int>(g[q[6]]), static_cast<int>(g[q[7]]));
    s = p.sign(v);
    sv = p.uniform_scale(v);
  }
};

// IQ3_S: 9-bit grid indices (8 bits in qs, the ninth in qh: bit j of qh[v]
// for index 8v + j), explicit sign bytes, 4-bit scales. The 64 indices of a
// block are built once, 16 at a time (vector ninth bits from a broadcast of
// two qh bytes), instead of with four scalar operations each.
struct IQ3S : SignedVecs<IQ3S, BlockIQ3_S> {
  static constexpr float kScale = 1.0f;
  static constexpr int kOffset = kIq3sMax;
  struct Pre {
    alignas(32) uint16_t idx[kQKK / 4];
  };
  static void prepare(const Block& w, Pre& p) {
    const __m256i word_bit = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192,
                                               16384, static_cast<int16_t>(-32768));
    const __m256i ninth = _mm256_set1_epi16(0x100);
#pragma GCC unroll 4
    for (int i = 0; i < kQKK / 4; i += 16) {
      const __m256i low8 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs + i)));
      uint16_t two;
      std::memcpy(&two, w.qh + i / 8, sizeof two);
      const __m256i h = _mm256_set1_epi16(static_cast<int16_t>(two));
      const __m256i set = _mm256_cmpeq_epi16(_mm256_and_si256(h, word_bit), word_bit);
      _mm256_store_si256(reinterpret_cast<__m256i*>(p.idx + i), _mm256_or_si256(low8, _mm256_and_si256(set, ninth)));
    }
  }
  static void vec(const Block& w, const Pre& p, int v, __m256i& u, __m256i& s, __m256i& sv) {
    const auto& g = quant::kIq3sGrid;
    const uint16_t* i = p.idx + 8 * v;
    u = _mm256_setr_epi32(static_cast<int>(g[i[0]]), static_cast<int>(g[i[1]]), static_cast<int>(g[i[2]]),
                          static_cast<int>(g[i[3]]), static_cast<int>(g[i[4]]), static_cast<int>(g[i[5]]),
                          static_cast<int>(g[i[6]]), static_cast<int>(g[i[7]]));
    s = avx2::signs_of_bytes(w.signs + 4 * v);
    sv = _mm256_set1_epi16(odd((w.scales[v / 2] >> (4 * (v % 2))) & 0xF));
  }
};

// IQ4_XS: signed values from the 16-entry table (never 0, so they serve as
// their own signs), 6-bit scales minus 32 per 32 values.
struct IQ4XS : SignedVecs<IQ4XS, BlockIQ4_XS> {
  static constexpr float kScale = 1.0f;
  static void vec(const Block& w, const Pre&, int v, __m256i& u, __m256i& s, __m256i& sv) {
    constexpr int kScaleBias = 32;
    const __m256i values = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIq4nlValues.data())));
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs + 16 * v));
    const __m256i idx = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), low4);
    s = _mm256_shuffle_epi8(values, idx);
    u = _mm256_abs_epi8(s);
    const int ls = ((w.scales_l[v / 2] >> (4 * (v % 2))) & 0xF) | (((w.scales_h >> (2 * v)) & 3) << 4);
    sv = _mm256_set1_epi16(static_cast<int16_t>(ls - kScaleBias));
  }
};

}  // namespace

const QuantDot* quant_dot_iq_avx2(TensorType type) {
  // The K types' AVX2 activation format and quantizer.
  const QuantDot& q8_k = *quant_dot_k_avx2(TensorType::Q4_K);
  static const QuantDot iq2_xxs = avx2::with_kernel<IQ2XXS>(q8_k), iq2_xs = avx2::with_kernel<IQ2XS>(q8_k),
                        iq2_s = avx2::with_kernel<IQ2S>(q8_k), iq3_xxs = avx2::with_kernel<IQ3XXS>(q8_k),
                        iq3_s = avx2::with_kernel<IQ3S>(q8_k), iq4_xs = avx2::with_kernel<IQ4XS>(q8_k);
  switch (type) {
    case TensorType::IQ2_XXS:
      return &iq2_xxs;
    case TensorType::IQ2_XS:
      return &iq2_xs;
    case TensorType::IQ2_S:
      return &iq2_s;
    case TensorType::IQ3_XXS:
      return &iq3_xxs;
    case TensorType::IQ3_S:
      return &iq3_s;
    case TensorType::IQ4_XS:
      return &iq4_xs;
    default:
      if (const QuantDot* q = quant_dot_iq1_avx2(type)) return q;
      if (const QuantDot* q = quant_dot_legacy_avx2(type)) return q;
      return quant_dot_ternary_avx2(type);
  }
}

}  // namespace ferrite::cpu
