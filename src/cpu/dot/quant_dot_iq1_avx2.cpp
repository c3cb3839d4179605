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

#include "cpu/dot/quant_dot_iq.h"
#include "cpu/dot/quant_dot_k.h"
#include "cpu/dot/quant_tile_avx2.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using avx2::kVecs;
using avx2::OffsetScaled;
using quant::BlockIQ1_M;
using quant::BlockIQ1_S;
using quant::kQKK;

constexpr int kOffset = 9;  // makes 8 grid + delta non-negative
constexpr int kGroups = 16;  // Q8_K 16-sums per block

inline int odd(uint32_t s) { return 2 * static_cast<int>(s) + 1; }

// 8 g + c per byte of four grid entries (g: signed bytes -1, 0, 1; c bytes).
inline __m256i scaled_grid(uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3, __m256i c) {
  const __m256i g = avx2::gather64(quant::kIq1sGrid.data(), i0, i1, i2, i3);
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

struct IQ1S : OffsetScaled {
  using Block = BlockIQ1_S;
  static constexpr float kScale = 0.125f;
  void decode(const Block& w) {
    int16_t sc[kGroups];
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      const uint32_t h = w.qh[v];
      const uint8_t* q = w.qs + 4 * v;
      const __m256i c = _mm256_set1_epi8(static_cast<char>(kOffset + ((h & 0x8000) != 0 ? -1 : 1)));
      u[v] = scaled_grid(q[0] | ((h << 8) & 0x700), q[1] | ((h << 5) & 0x700), q[2] | ((h << 2) & 0x700),
                         q[3] | ((h >> 1) & 0x700), c);
      sc[2 * v] = sc[2 * v + 1] = static_cast<int16_t>(odd((h >> 12) & 7));
    }
    set_scales(sc, kOffset);
    d = _cvtsh_ss(w.d);
  }
};

struct IQ1M : OffsetScaled {
  using Block = BlockIQ1_M;
  static constexpr float kScale = 0.125f;
  void decode(const Block& w) {
    uint16_t sc[4];
    std::memcpy(sc, w.scales, sizeof sc);
    int16_t ls[kGroups];
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      const uint32_t h0 = w.qh[2 * v], h1 = w.qh[2 * v + 1];
      const uint8_t* q = w.qs + 4 * v;
      // Delta signs: bit 3 of each qh byte for its first group, bit 7 for its second.
      const uint32_t neg = ((h0 >> 3) & 1) | ((h0 >> 6) & 2) | ((h1 >> 1) & 4) | ((h1 >> 4) & 8);
      const __m256i c = avx2::load256(kGroupOffsets[neg].data());
      u[v] = scaled_grid(q[0] | ((h0 << 8) & 0x700), q[1] | ((h0 << 4) & 0x700), q[2] | ((h1 << 8) & 0x700),
                         q[3] | ((h1 << 4) & 0x700), c);
      const uint32_t bits = sc[v / 2] >> (6 * (v % 2));
      ls[2 * v] = static_cast<int16_t>(odd(bits & 7));
      ls[2 * v + 1] = static_cast<int16_t>(odd((bits >> 3) & 7));
    }
    set_scales(ls, kOffset);
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
