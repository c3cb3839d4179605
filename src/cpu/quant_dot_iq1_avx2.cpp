// AVX2 products of IQ1_S and IQ1_M weights with Q8_K activations (the
// reference: quant_dot_iq_ref.cpp). The weight value in units of d/8 is
// 8 grid + delta (grid -1, 0, 1; delta -1 or +1 per 32 values (IQ1_S) or per
// 8 (IQ1_M)); it is decoded as the unsigned byte u = 8 grid + delta + 9
// (0..18) so that vpmaddubsw takes it as it is, and the offset 9 comes back
// out through the activations' 16-sums: sum = sum_v scale u.a - 9 sum_g scale_g bsum_g.
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
using avx2::load256;
using avx2::scaled_dot;
using quant::BlockIQ1_M;
using quant::BlockIQ1_S;
using quant::kQKK;

constexpr int kOffset = 9;  // makes 8 grid + delta non-negative
constexpr int kGroups = 16;  // Q8_K 16-sums per block

inline int odd(uint32_t s) { return 2 * static_cast<int>(s) + 1; }

inline __m256i set64(uint64_t e0, uint64_t e1, uint64_t e2, uint64_t e3) {
  return _mm256_set_epi64x(static_cast<int64_t>(e3), static_cast<int64_t>(e2), static_cast<int64_t>(e1),
                           static_cast<int64_t>(e0));
}

// 8 g + c per byte of four grid entries (g: signed bytes -1, 0, 1; c bytes).
inline __m256i scaled_grid(uint64_t e0, uint64_t e1, uint64_t e2, uint64_t e3, __m256i c) {
  const __m256i g = set64(e0, e1, e2, e3);
  // Shifting 16-bit lanes by 3 moves each low byte's top bits into the high
  // byte's bits 0..2; the mask clears them (8 g has those bits clear).
  const __m256i g8 = _mm256_and_si256(_mm256_slli_epi16(g, 3), _mm256_set1_epi8(static_cast<char>(0xF8)));
  return _mm256_add_epi8(g8, c);
}

// delta + 9 per byte for the 16 patterns of four 8-value groups' delta
// signs (bit l set: group l has delta -1).
std::array<std::array<uint8_t, 32>, 16> make_group_offsets() {
  std::array<std::array<uint8_t, 32>, 16> t{};
  for (int bits = 0; bits < 16; ++bits) {
    for (int j = 0; j < 32; ++j) t[bits][j] = static_cast<uint8_t>(kOffset + ((bits >> (j / 8)) & 1 ? -1 : 1));
  }
  return t;
}
const std::array<std::array<uint8_t, 32>, 16> kGroupOffsets = make_group_offsets();

// The decoded block: u and one scale per 16 values (sv, avx2::lane_scales),
// corr = 9 * scale per 16-sum.
struct OffsetScaled {
  __m256i u[kVecs], sv[kVecs];
  __m256i corr;
  float d;

  int32_t sum(const quant::BlockQ8_K& a) const {
    __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) acc = _mm256_add_epi32(acc, scaled_dot(u[v], load256(a.qs + 32 * v), sv[v]));
    acc = _mm256_sub_epi32(acc, _mm256_madd_epi16(load256(a.bsums), corr));
    return avx2::hsum_epi32(acc);
  }
};

struct IQ1S : OffsetScaled {
  using Block = BlockIQ1_S;
  static constexpr float kScale = 0.125f;
  void decode(const Block& w) {
    const auto& g = quant::kIq1sGrid;
    alignas(32) int16_t c16[kGroups];
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      const uint32_t h = w.qh[v];
      const uint8_t* q = w.qs + 4 * v;
      const __m256i c = _mm256_set1_epi8(static_cast<char>(kOffset + ((h & 0x8000) != 0 ? -1 : 1)));
      u[v] = scaled_grid(g[q[0] | ((h << 8) & 0x700)], g[q[1] | ((h << 5) & 0x700)], g[q[2] | ((h << 2) & 0x700)],
                         g[q[3] | ((h >> 1) & 0x700)], c);
      const int ls = odd((h >> 12) & 7);
      sv[v] = _mm256_set1_epi16(static_cast<int16_t>(ls));
      c16[2 * v] = c16[2 * v + 1] = static_cast<int16_t>(kOffset * ls);
    }
    corr = _mm256_load_si256(reinterpret_cast<const __m256i*>(c16));
    d = _cvtsh_ss(w.d);
  }
};

struct IQ1M : OffsetScaled {
  using Block = BlockIQ1_M;
  static constexpr float kScale = 0.125f;
  void decode(const Block& w) {
    const auto& g = quant::kIq1sGrid;
    uint16_t sc[4];
    std::memcpy(sc, w.scales, sizeof sc);
    alignas(32) int16_t c16[kGroups];
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      const uint32_t h0 = w.qh[2 * v], h1 = w.qh[2 * v + 1];
      const uint8_t* q = w.qs + 4 * v;
      // Delta signs: bit 3 of each qh byte for its first group, bit 7 for its second.
      const uint32_t neg = ((h0 >> 3) & 1) | ((h0 >> 6) & 2) | ((h1 >> 1) & 4) | ((h1 >> 4) & 8);
      const __m256i c = avx2::load256(kGroupOffsets[neg].data());
      u[v] = scaled_grid(g[q[0] | ((h0 << 8) & 0x700)], g[q[1] | ((h0 << 4) & 0x700)], g[q[2] | ((h1 << 8) & 0x700)],
                         g[q[3] | ((h1 << 4) & 0x700)], c);
      const uint32_t bits = sc[v / 2] >> (6 * (v % 2));
      const int ls1 = odd(bits & 7), ls2 = odd((bits >> 3) & 7);
      sv[v] = avx2::lane_scales(ls1, ls2);
      c16[2 * v] = static_cast<int16_t>(kOffset * ls1);
      c16[2 * v + 1] = static_cast<int16_t>(kOffset * ls2);
    }
    corr = _mm256_load_si256(reinterpret_cast<const __m256i*>(c16));
    const auto bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                            (sc[3] & 0xF000));
    d = _cvtsh_ss(bits);
  }
};

}  // namespace

const QuantDot* quant_dot_iq1_avx2(TensorType type) {
  const QuantDot& q8_k = *quant_dot_k_avx2(TensorType::Q4_K);
  static const QuantDot iq1_s = avx2::with_kernel<IQ1S>(q8_k), iq1_m = avx2::with_kernel<IQ1M>(q8_k);
  switch (type) {
    case TensorType::IQ1_S:
      return &iq1_s;
    case TensorType::IQ1_M:
      return &iq1_m;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
