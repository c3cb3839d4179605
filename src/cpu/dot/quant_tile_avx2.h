// The register-blocked tiles shared by the AVX2 products of quant_dot_iq.h
// (quant_dot_iq/iq1/ternary/legacy_avx2.cpp) (include from *_avx2.cpp files only: the
// functions here are compiled for AVX2).
//
// A Kernel decodes one weight block (decode) and gives, for one Q8_K
// activation block, the block's exact integer sum (sum); the tile adds
// d_w * d_a * sum per block in block order for each output, then scales by
// Kernel::kScale, as the reference does (quant_dot_iq.h), so tiles of every
// shape and the dots equal the reference bit for bit. The products are
// pinned (asm barrier) so the compiler cannot fuse them into the sum: the
// reference is compiled without FMA.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/dot/quant_dot.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"

namespace ferrite::cpu::avx2 {

// Sum of the eight int32 lanes.
inline int32_t hsum_epi32(__m256i v) {
  __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
  t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(t);
}

// One int16 per pair of bytes: `lo` in the low 128 bits (values 0..15 of a
// 32-value vector), `hi` in the high ones.
inline __m256i lane_scales(int lo, int hi) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(hi)), _mm_set1_epi16(static_cast<int16_t>(lo)));
}

// Eight int32 lanes summing to sum_j u_j a_j scale over 32 bytes: u
// unsigned, a signed (every pair sum |u0 a0 + u1 a1| < 2^15), `scale` one
// int16 per pair.
inline __m256i scaled_dot(__m256i u, __m256i a, __m256i scale) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), scale);
}

// (d_w * d_a) * sumi, rounded as the reference rounds it.
inline float block_term(float dw, float da, int32_t sumi) {
  float p = dw * da;
  p = p * static_cast<float>(sumi);
  asm("" : "+x"(p));
  return p;
}

constexpr int kVecs = quant::kQKK / 32;  // 32-value vectors per block

// Four 8-byte table entries as one vector (entry i0 lowest), loaded
// straight into vector registers.
inline __m256i gather64(const uint64_t* table, uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
  const auto half = [table](uint32_t a, uint32_t b) {
    const __m128d lo = _mm_castsi128_pd(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(table + a)));
    return _mm_castpd_si128(_mm_loadh_pd(lo, reinterpret_cast<const double*>(table + b)));
  };
  return _mm256_inserti128_si256(_mm256_castsi128_si256(half(i0, i1)), half(i2, i3), 1);
}

// Vector v's scales (avx2::lane_scales's layout: sc16[2v] for values
// 32v..32v+15, sc16[2v+1] for the next 16) from the sixteen int16 scales,
// one shuffle per vector.
inline void pair_scales(__m256i sc16, __m256i (&sv)[kVecs]) {
  const __m256i first = _mm256_permute2x128_si256(sc16, sc16, 0x00), second = _mm256_permute2x128_si256(sc16, sc16, 0x11);
#pragma GCC unroll 8
  for (int v = 0; v < kVecs; ++v) {
    const int j = v % 4;  // scales 2j and 2j + 1 of the eight in `first` or `second`
    const char a = static_cast<char>(4 * j), b = static_cast<char>(4 * j + 1);
    const char c = static_cast<char>(4 * j + 2), e = static_cast<char>(4 * j + 3);
    const __m256i pick = _mm256_setr_epi8(a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b,  //
                                          c, e, c, e, c, e, c, e, c, e, c, e, c, e, c, e);
    sv[v] = _mm256_shuffle_epi8(v < 4 ? first : second, pick);
  }
}

// Weights as unsigned bytes u = w + offset (w the signed value in the
// type's units; IQ1: 8 grid + delta), a scale per 16 values (sv) and corr =
// offset * scale per Q8_K 16-sum, which takes the offset back out:
// sum = sum_v (u.a scaled) - sum_g corr_g bsum_g.
struct OffsetScaled {
  __m256i u[kVecs], sv[kVecs];
  __m256i corr;
  float d;

  // sv and corr from the sixteen scales (one per 16 values, in order).
  void set_scales(const int16_t (&sc)[16], int offset) {
    const __m256i sc16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc));
    pair_scales(sc16, sv);
    corr = _mm256_mullo_epi16(sc16, _mm256_set1_epi16(static_cast<int16_t>(offset)));
  }

  int32_t sum(const quant::BlockQ8_K& a) const {
    __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) acc = _mm256_add_epi32(acc, scaled_dot(u[v], load256(a.qs + 32 * v), sv[v]));
    acc = _mm256_sub_epi32(acc, _mm256_madd_epi16(load256(a.bsums), corr));
    return hsum_epi32(acc);
  }
};

// Weights as magnitudes u (unsigned bytes) with signs s (+1 / -1 bytes),
// scales as above: the form for one to four tokens, where the signs cost
// less on the activations than folding them in would. Kernels whose values
// fit an offset (kOffset: |w| <= kOffset <= 124) turn into OffsetScaled for
// panels, where the sign would be paid once per token.
struct SignedScaled {
  __m256i u[kVecs], s[kVecs], sv[kVecs];
  float d;

  int32_t sum(const quant::BlockQ8_K& a) const {
    __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      acc = _mm256_add_epi32(acc, scaled_dot(u[v], _mm256_sign_epi8(load256(a.qs + 32 * v), s[v]), sv[v]));
    }
    return hsum_epi32(acc);
  }

  // The same weights as u + offset, with corr = offset * scale per 16-sum.
  void to_offset(int offset, OffsetScaled& o) const {
    const __m256i off = _mm256_set1_epi8(static_cast<char>(offset));
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) {
      o.u[v] = _mm256_add_epi8(_mm256_sign_epi8(u[v], s[v]), off);
      o.sv[v] = sv[v];
    }
    // The sixteen scales in order from sv: lane 0 of each 128-bit half of
    // sv[v] holds scale 2v (low half) and 2v + 1 (high half).
    const __m256i s01 = _mm256_unpacklo_epi16(sv[0], sv[1]), s23 = _mm256_unpacklo_epi16(sv[2], sv[3]);
    const __m256i s45 = _mm256_unpacklo_epi16(sv[4], sv[5]), s67 = _mm256_unpacklo_epi16(sv[6], sv[7]);
    // Halves: scales 0, 2, ..., 14 (low) and 1, 3, ..., 15 (high).
    const __m256i all = _mm256_unpacklo_epi64(_mm256_unpacklo_epi32(s01, s23), _mm256_unpacklo_epi32(s45, s67));
    const __m128i even = _mm256_castsi256_si128(all), odd = _mm256_extracti128_si256(all, 1);
    const __m256i sc16 = _mm256_set_m128i(_mm_unpackhi_epi16(even, odd), _mm_unpacklo_epi16(even, odd));
    o.corr = _mm256_mullo_epi16(sc16, _mm256_set1_epi16(static_cast<int16_t>(offset)));
    o.d = d;
  }
};

// A SignedScaled kernel built one vector at a time: Derived::prepare(w, pre)
// decodes what is cheaper per block (Derived::Pre; by default nothing), then
// Derived::vec(w, pre, v, u, s, sv) gives vector v's magnitudes, signs and
// scales. tile_fixed_vecs never holds a decoded block (24 vectors, more than
// the 16 registers): each vector goes straight into the token sums.
template <typename Derived, typename BlockT>
struct SignedVecs : SignedScaled {
  using Block = BlockT;
  struct Pre {};
  static void prepare(const Block&, Pre&) {}
  void decode(const Block& w) {
    typename Derived::Pre pre;
    Derived::prepare(w, pre);
#pragma GCC unroll 8
    for (int v = 0; v < kVecs; ++v) Derived::vec(w, pre, v, u[v], s[v], sv[v]);
    d = _cvtsh_ss(w.d);
  }
};

template <typename Kernel>
concept VectorDecoded = requires(const typename Kernel::Block& w, typename Kernel::Pre& p, __m256i& x) {
  Kernel::prepare(w, p);
  Kernel::vec(w, p, 0, x, x, x);
};

// tile_fixed for a VectorDecoded kernel: the same integer sums (exact, any
// order) and the same block terms in the same order.
template <typename Kernel, int NR, int NT>
void tile_fixed_vecs(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  using Block = typename Kernel::Block;
  float sum[NR][NT] = {};
  for (int64_t b = 0; b < k / quant::kQKK; ++b) {
    const quant::BlockQ8_K* ab[NT];
    for (int t = 0; t < NT; ++t) ab[t] = reinterpret_cast<const quant::BlockQ8_K*>(act + t * arb) + b;
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const Block& blk = reinterpret_cast<const Block*>(w + r * wrb)[b];
      typename Kernel::Pre pre;
      Kernel::prepare(blk, pre);
      __m256i acc[NT];
      for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int v = 0; v < kVecs; ++v) {
        __m256i u, s, sv;
        Kernel::vec(blk, pre, v, u, s, sv);
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) {
          const __m256i a = _mm256_sign_epi8(load256(ab[t]->qs + 32 * v), s);
          acc[t] = _mm256_add_epi32(acc[t], scaled_dot(u, a, sv));
          if constexpr (NT > 1) settle(acc[t]);
        }
      }
      const float dw = _cvtsh_ss(blk.d);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) sum[r][t] += block_term(dw, ab[t]->d, hsum_epi32(acc[t]));
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = sum[r][t] * Kernel::kScale;
  }
}

// y[t * ys + r] = the dot of weight row r with activation row t.
template <typename Kernel, int NR, int NT>
void tile_fixed(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  using Block = typename Kernel::Block;
  float sum[NR][NT] = {};
  for (int64_t b = 0; b < k / quant::kQKK; ++b) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      Kernel kern;
      kern.decode(reinterpret_cast<const Block*>(w + r * wrb)[b]);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const auto& ab = reinterpret_cast<const quant::BlockQ8_K*>(act + t * arb)[b];
        sum[r][t] += block_term(kern.d, ab.d, kern.sum(ab));
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = sum[r][t] * Kernel::kScale;
  }
}

// Tokens per panel: a tile of more than four tokens decodes each weight
// block once for up to this many (QuantDot::tile_tokens), the sums kept in memory.
constexpr int64_t kPanelTokens = 64;

template <typename Kernel, int NR>
void tile_panel(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t nt, int64_t k, float* y,
                int64_t ys) {
  using Block = typename Kernel::Block;
  float sum[NR][kPanelTokens];
  for (int r = 0; r < NR; ++r) std::fill_n(sum[r], nt, 0.0f);
  for (int64_t b = 0; b < k / quant::kQKK; ++b) {
    for (int r = 0; r < NR; ++r) {
      Kernel kern;
      kern.decode(reinterpret_cast<const Block*>(w + r * wrb)[b]);
      const auto run = [&](const auto& form) {
        for (int64_t t = 0; t < nt; ++t) {
          const auto& ab = reinterpret_cast<const quant::BlockQ8_K*>(act + t * arb)[b];
          sum[r][t] += block_term(form.d, ab.d, form.sum(ab));
        }
      };
      if constexpr (requires { Kernel::kOffset; }) {
        OffsetScaled off;
        kern.to_offset(Kernel::kOffset, off);
        run(off);
      } else {
        run(kern);
      }
    }
  }
  for (int64_t t = 0; t < nt; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = sum[r][t] * Kernel::kScale;
  }
}

// The tile of QuantDot for an Impl with
//   template <int NR, int NT> static void fixed(w, wrb, act, arb, k, y, ys)  (NR, NT <= 4)
//   template <int NR> static void panel(w, wrb, act, arb, nt, k, y, ys)      (4 < nt <= kPanelTokens)
// each computing y[t * ys + r] = dot(weight row r, activation row t).
template <typename Impl>
void tile(const uint8_t* w, size_t wrb, int64_t nr, const uint8_t* a, size_t arb, int64_t nt, int64_t k, float* y,
          int64_t ys) {
  using Fn = void (*)(const uint8_t*, size_t, const uint8_t*, size_t, int64_t, float*, int64_t);
  static constexpr Fn kFixed[4][4] = {
      {Impl::template fixed<1, 1>, Impl::template fixed<1, 2>, Impl::template fixed<1, 3>, Impl::template fixed<1, 4>},
      {Impl::template fixed<2, 1>, Impl::template fixed<2, 2>, Impl::template fixed<2, 3>, Impl::template fixed<2, 4>},
      {Impl::template fixed<3, 1>, Impl::template fixed<3, 2>, Impl::template fixed<3, 3>, Impl::template fixed<3, 4>},
      {Impl::template fixed<4, 1>, Impl::template fixed<4, 2>, Impl::template fixed<4, 3>, Impl::template fixed<4, 4>},
  };
  using PanelFn = void (*)(const uint8_t*, size_t, const uint8_t*, size_t, int64_t, int64_t, float*, int64_t);
  static constexpr PanelFn kPanels[4] = {Impl::template panel<1>, Impl::template panel<2>, Impl::template panel<3>,
                                         Impl::template panel<4>};
  if (nt <= 4) {
    kFixed[nr - 1][nt - 1](w, wrb, a, arb, k, y, ys);
  } else {
    kPanels[nr - 1](w, wrb, a, arb, nt, k, y, ys);
  }
}

template <typename Impl>
float dot(const void* w_row, const void* act_row, int64_t k) {
  float y;
  Impl::template fixed<1, 1>(static_cast<const uint8_t*>(w_row), 0, static_cast<const uint8_t*>(act_row), 0, k, &y, 1);
  return y;
}

// `base` (its activation format and quantizer) with Impl's products.
template <typename Impl>
QuantDot with_tiles(const QuantDot& base) {
  QuantDot q = base;
  q.dot = dot<Impl>;
  q.tile = tile<Impl>;
  q.tile_tokens = kPanelTokens;
  return q;
}

// The 256-value kernels' Impl.
template <typename Kernel>
struct SuperBlocks {
  template <int NR, int NT>
  static void fixed(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
    if constexpr (VectorDecoded<Kernel>) {
      tile_fixed_vecs<Kernel, NR, NT>(w, wrb, act, arb, k, y, ys);
    } else {
      tile_fixed<Kernel, NR, NT>(w, wrb, act, arb, k, y, ys);
    }
  }
  template <int NR>
  static void panel(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t nt, int64_t k, float* y,
                    int64_t ys) {
    tile_panel<Kernel, NR>(w, wrb, act, arb, nt, k, y, ys);
  }
};

template <typename Kernel>
QuantDot with_kernel(const QuantDot& base) {
  return with_tiles<SuperBlocks<Kernel>>(base);
}

// 0xFF in byte j of the 32 where bit j of `bits` is set, else 0.
inline __m256i bit_masks(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                             _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                                              2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// The IQ2/IQ3 sign bytes of 32 7-bit sign indices (one per byte): bit 7 set
// when the index has an odd number of set bits (quant::iq2_sign_byte), so
// that every group of eight has an even number of negative signs.
inline __m256i sign_bytes_with_parity(__m256i index7) {
  // 0x80 where a nibble has an odd number of set bits.
  const __m256i odd = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0,  //
                                       0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i lo = _mm256_shuffle_epi8(odd, _mm256_and_si256(index7, low4));
  const __m256i hi = _mm256_shuffle_epi8(odd, _mm256_and_si256(_mm256_srli_epi16(index7, 4), low4));
  return _mm256_or_si256(index7, _mm256_xor_si256(lo, hi));
}

// Four sign bytes (byte l for values 8l..8l+7, bit j set = value 8l + j
// negative) at p as 32 +1 / -1 bytes.
inline __m256i signs_of_bytes(const uint8_t* p) {
  int32_t four;
  std::memcpy(&four, p, sizeof four);
  return _mm256_or_si256(bit_masks(static_cast<uint32_t>(four)), _mm256_set1_epi8(1));
}

}  // namespace ferrite::cpu::avx2
