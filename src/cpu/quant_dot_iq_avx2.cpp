// AVX2 products of the IQ2 (XXS, XS, S), IQ3 (XXS, S) and IQ4_XS weights
// with Q8_K activations (the reference: quant_dot_iq_ref.cpp). Each block
// decodes into magnitudes, signs and scales (avx2::SignedScaled): the grid
// entries of the 32 values of a vector gathered by scalar loads, the signs as
// +1 / -1 bytes (from a 128-entry table of the 7-bit sign indices, or
// spread from the explicit sign bytes), the odd scales 2 s + 1 (IQ4_XS:
// ls - 32) one per 16 values; the integer sum is then vpsignb / vpmaddubsw /
// vpmaddwd per vector (every pair sum below 2^15: magnitudes <= 127, |a| <= 127).
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "cpu/quant_dot_iq.h"
#include "cpu/quant_dot_k.h"
#include "cpu/quant_tile_avx2.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using avx2::kVecs;
using avx2::SignedScaled;
using quant::BlockIQ2_S;
using quant::BlockIQ2_XS;
using quant::BlockIQ2_XXS;
using quant::BlockIQ3_S;
using quant::BlockIQ3_XXS;
using quant::BlockIQ4_XS;
using quant::kQKK;

constexpr int kSignIndices = 128;

// The eight +1 / -1 bytes of each 7-bit sign index (bit j of the sign byte
// set: byte j is -1).
constexpr std::array<uint64_t, kSignIndices> make_sign_bytes() {
  std::array<uint64_t, kSignIndices> t{};
  for (uint32_t i = 0; i < kSignIndices; ++i) {
    const uint8_t bits = quant::iq2_sign_byte(i);
    uint64_t v = 0;
    for (int j = 0; j < 8; ++j) v |= static_cast<uint64_t>((bits >> j) & 1u ? 0xFF : 0x01) << (8 * j);
    t[i] = v;
  }
  return t;
}
constexpr std::array<uint64_t, kSignIndices> kSignBytes = make_sign_bytes();

// Four 7-bit sign indices (bits 0..27 of `packed`) as 32 sign bytes.
inline __m256i signs_from_indices(uint32_t packed) {
  return avx2::gather64(kSignBytes.data(), packed & 0x7F, (packed >> 7) & 0x7F, (packed >> 14) & 0x7F,
                        (packed >> 21) & 0x7F);
}

// Four explicit sign bytes (byte l for values 8l..8l+7, bit j set =
// negative) as 32 sign bytes.
inline __m256i signs_from_bits(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, sizeof bits);
  return _mm256_or_si256(avx2::bit_masks(bits), _mm256_set1_epi8(1));
}

inline int16_t odd(uint32_t s) { return static_cast<int16_t>(2 * s + 1); }

// The largest grid magnitude of each type: the offset that makes every
// signed value non-negative in a panel (avx2::SignedScaled::to_offset).
constexpr int kIq2Max = 43, kIq3xxsMax = 62, kIq3sMax = 15;

// The sixteen 4-bit scales of IQ2_XS/IQ2_S (low nibble of byte v: values
// 32v..32v+15, high nibble: 32v+16..32v+31) as 2 s + 1, one per vector
// (avx2::lane_scales's layout).
inline void nibble_scales(const uint8_t* packed, __m256i (&sv)[kVecs]) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed));
  const __m128i low4 = _mm_set1_epi8(0x0F);
  const __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(bytes, low4), _mm_and_si128(_mm_srli_epi16(bytes, 4), low4));
  avx2::pair_scales(_mm256_cvtepu8_epi16(_mm_or_si128(_mm_add_epi8(nib, nib), _mm_set1_epi8(1))), sv);
}

struct IQ2XXS : SignedScaled {
  using Block = BlockIQ2_XXS;
  static constexpr float kScale = 0.125f;
  static constexpr int kOffset = kIq2Max;
  void decode(const Block& w) {
    const uint64_t* g = quant::kIq2xxsGrid.data();
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      uint32_t aux[2];
      std::memcpy(aux, w.qs + 4 * v, sizeof aux);
      u[v] = avx2::gather64(g, aux[0] & 0xFF, (aux[0] >> 8) & 0xFF, (aux[0] >> 16) & 0xFF, aux[0] >> 24);
      s[v] = signs_from_indices(aux[1]);
      sv[v] = _mm256_set1_epi16(odd(aux[1] >> 28));
    }
    d = _cvtsh_ss(w.d);
  }
};

struct IQ2XS : SignedScaled {
  using Block = BlockIQ2_XS;
  static constexpr float kScale = 0.125f;
  static constexpr int kOffset = kIq2Max;
  void decode(const Block& w) {
    const uint64_t* g = quant::kIq2xsGrid.data();
    const uint64_t* sb = kSignBytes.data();
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      const uint16_t* q = w.qs + 4 * v;
      u[v] = avx2::gather64(g, q[0] & 0x1FF, q[1] & 0x1FF, q[2] & 0x1FF, q[3] & 0x1FF);
      s[v] = avx2::gather64(sb, q[0] >> 9, q[1] >> 9, q[2] >> 9, q[3] >> 9);
    }
    nibble_scales(w.scales, sv);
    d = _cvtsh_ss(w.d);
  }
};

struct IQ2S : SignedScaled {
  using Block = BlockIQ2_S;
  static constexpr float kScale = 0.125f;
  static constexpr int kOffset = kIq2Max;
  void decode(const Block& w) {
    const uint64_t* g = quant::kIq2sGrid.data();
    const uint8_t* signs = w.qs + kQKK / 8;
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      const uint8_t* q = w.qs + 4 * v;
      const uint32_t h = w.qh[v];
      u[v] = avx2::gather64(g, q[0] | ((h << 8) & 0x300), q[1] | ((h << 6) & 0x300), q[2] | ((h << 4) & 0x300),
                            q[3] | ((h << 2) & 0x300));
      s[v] = signs_from_bits(signs + 4 * v);
    }
    nibble_scales(w.scales, sv);
    d = _cvtsh_ss(w.d);
  }
};

struct IQ3XXS : SignedScaled {
  using Block = BlockIQ3_XXS;
  static constexpr float kScale = 0.25f;
  static constexpr int kOffset = kIq3xxsMax;
  void decode(const Block& w) {
    const auto& g = quant::kIq3xxsGrid;
    const uint8_t* scales_and_signs = w.qs + kQKK / 4;
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      const uint8_t* q = w.qs + 8 * v;
      uint32_t aux;
      std::memcpy(&aux, scales_and_signs + 4 * v, sizeof aux);
      u[v] = _mm256_setr_epi32(static_cast<int>(g[q[0]]), static_cast<int>(g[q[1]]), static_cast<int>(g[q[2]]),
                               static_cast<int>(g[q[3]]), static_cast<int>(g[q[4]]), static_cast<int>(g[q[5]]),
                               static_cast<int>(g[q[6]]), static_cast<int>(g[q[7]]));
      s[v] = signs_from_indices(aux);
      sv[v] = _mm256_set1_epi16(odd(aux >> 28));
    }
    d = _cvtsh_ss(w.d);
  }
};

struct IQ3S : SignedScaled {
  using Block = BlockIQ3_S;
  static constexpr float kScale = 1.0f;
  static constexpr int kOffset = kIq3sMax;
  void decode(const Block& w) {
    const auto& g = quant::kIq3sGrid;
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      const uint8_t* q = w.qs + 8 * v;
      const uint32_t h = w.qh[v];  // bit j: the ninth bit of index j
      u[v] = _mm256_setr_epi32(
          static_cast<int>(g[q[0] | ((h << 8) & 0x100)]), static_cast<int>(g[q[1] | ((h << 7) & 0x100)]),
          static_cast<int>(g[q[2] | ((h << 6) & 0x100)]), static_cast<int>(g[q[3] | ((h << 5) & 0x100)]),
          static_cast<int>(g[q[4] | ((h << 4) & 0x100)]), static_cast<int>(g[q[5] | ((h << 3) & 0x100)]),
          static_cast<int>(g[q[6] | ((h << 2) & 0x100)]), static_cast<int>(g[q[7] | ((h << 1) & 0x100)]));
      s[v] = signs_from_bits(w.signs + 4 * v);
      sv[v] = _mm256_set1_epi16(odd((w.scales[v / 2] >> (4 * (v % 2))) & 0xF));
    }
    d = _cvtsh_ss(w.d);
  }
};

// IQ4_XS: signed values from the 16-entry table (never 0, so they serve as
// their own signs), 6-bit scales minus 32 per 32 values.
struct IQ4XS : SignedScaled {
  using Block = BlockIQ4_XS;
  static constexpr float kScale = 1.0f;
  void decode(const Block& w) {
    constexpr int kScaleBias = 32;
    const __m256i values = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kIq4nlValues.data())));
    const __m256i low4 = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs + 16 * v));
      const __m256i idx = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), low4);
      s[v] = _mm256_shuffle_epi8(values, idx);
      u[v] = _mm256_abs_epi8(s[v]);
      const int ls = ((w.scales_l[v / 2] >> (4 * (v % 2))) & 0xF) | (((w.scales_h >> (2 * v)) & 3) << 4);
      sv[v] = _mm256_set1_epi16(static_cast<int16_t>(ls - kScaleBias));
    }
    d = _cvtsh_ss(w.d);
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
