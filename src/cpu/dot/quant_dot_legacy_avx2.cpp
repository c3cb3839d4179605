// AVX2 products of the legacy 32-value types that had no integer dot: Q5_0,
// IQ4_NL and MXFP4 with Q8_0 activations, Q4_1 and Q5_1 with Q8_1 activations (the
// reference: quant_dot_legacy_ref.cpp).
//
// Integer part: four blocks per step. Q4_1/Q5_1 values are unsigned (0..15,
// 0..31) and go to vpmaddubsw as they are; Q5_0 (q - 16) and IQ4_NL (the
// non-linear table) are signed and go as |w| with w's sign moved onto the
// activation (vpsignb); MXFP4 as IQ4_NL with its own table (2 x E2M1) and
// its E8M0 byte turned into the float scale (quant/mxfp4.h) in place of f16. The four block sums come out of two rounds of
// vphaddd, as in quant_dot_avx2.cpp.
// Float part: the four block terms (d_w * d_a) * s (+ m_w * s_a) are formed
// four at a time, each rounded as the reference rounds it (products pinned,
// no fused multiply-add), then added to the output's sum one by one in block
// order, so every tile shape equals the reference bit for bit.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/dot/quant_dot_iq.h"
#include "cpu/dot/quant_tile_avx2.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "quant/mxfp4.h"

namespace ferrite::cpu {
namespace {

using quant::BlockIQ4_NL;
using quant::BlockMXFP4;
using quant::BlockQ4_1;
using quant::BlockQ5_0;
using quant::BlockQ5_1;
using quant::BlockQ8_0;
using quant::BlockQ8_1;
using quant::kQK;

constexpr int kStep = 4;  // blocks per step

using avx2::load256;

// The 32 nibbles of a block in value order: low nibbles of qs[0..15] are
// values 0..15, high nibbles values 16..31.
inline __m256i nibbles(const uint8_t* qs) {
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
}

// Bit j of the 32-bit qh as bit 4 of byte j.
inline __m256i fifth_bits(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  return _mm256_and_si256(avx2::bit_masks(bits), _mm256_set1_epi8(0x10));
}

// Per type: the block's 32 values (signed types: as w, to be split into |w|
// and sign), the activation block type, whether m_w * s_a is added.
struct Q41 {
  using Block = BlockQ4_1;
  using Act = BlockQ8_1;
  static constexpr bool kSigned = false;
  static __m256i values(const Block& w) { return nibbles(w.qs); }
};
struct Q51 {
  using Block = BlockQ5_1;
  using Act = BlockQ8_1;
  static constexpr bool kSigned = false;
  static __m256i values(const Block& w) { return _mm256_or_si256(nibbles(w.qs), fifth_bits(w.qh)); }
};
struct Q50 {
  using Block = BlockQ5_0;
  using Act = BlockQ8_0;
  static constexpr bool kSigned = true;
  static __m256i values(const Block& w) {
    return _mm256_sub_epi8(_mm256_or_si256(nibbles(w.qs), fifth_bits(w.qh)), _mm256_set1_epi8(16));
  }
};
// IQ4_NL and MXFP4: a 16-entry int8 table looked up by the nibbles.
template <typename B, const std::array<int8_t, 16>& kTable>
struct TableType {
  using Block = B;
  using Act = BlockQ8_0;
  static constexpr bool kSigned = true;
  static __m256i values(const Block& w) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kTable.data())));
    return _mm256_shuffle_epi8(table, nibbles(w.qs));
  }
};
using IQ4NL = TableType<BlockIQ4_NL, quant::kIq4nlValues>;
using MXFP4 = TableType<BlockMXFP4, quant::kMxfp4Values>;

template <typename Act>
constexpr bool kHasOffset = std::is_same_v<Act, BlockQ8_1>;

// Four f16 values (lanes past n zero) as floats.
template <int N, typename Get>
inline __m128 f16_lanes(Get get) {
  return _mm_cvtph_ps(_mm_setr_epi16(static_cast<int16_t>(get(0)), static_cast<int16_t>(N > 1 ? get(1) : 0),
                                     static_cast<int16_t>(N > 2 ? get(2) : 0),
                                     static_cast<int16_t>(N > 3 ? get(3) : 0), 0, 0, 0, 0));
}

// N block scales of a weight row (lanes past N zero): f16 d, or MXFP4's E8M0 byte.
template <typename T, int N>
inline __m128 weight_scales(const typename T::Block* w) {
  if constexpr (std::is_same_v<T, MXFP4>) {
    return _mm_castsi128_ps(_mm_setr_epi32(static_cast<int>(quant::mxfp4_scale_bits(w[0].e)),
                                           N > 1 ? static_cast<int>(quant::mxfp4_scale_bits(w[1].e)) : 0,
                                           N > 2 ? static_cast<int>(quant::mxfp4_scale_bits(w[2].e)) : 0,
                                           N > 3 ? static_cast<int>(quant::mxfp4_scale_bits(w[3].e)) : 0));
  } else {
    return f16_lanes<N>([w](int i) { return w[i].d; });
  }
}

// N (1..4) consecutive blocks of one weight row, decoded.
template <typename T, int N>
struct Step {
  using Block = typename T::Block;
  using Act = typename T::Act;
  static constexpr bool kOffset = kHasOffset<Act>;
  __m256i u[N], s[N];  // |w| (or w) and w's sign (signed types)
  __m128 d, m;

  void decode(const Block* w) {
#pragma GCC unroll 4
    for (int i = 0; i < N; ++i) {
      const __m256i v = T::values(w[i]);
      if constexpr (T::kSigned) {
        u[i] = _mm256_abs_epi8(v);
        s[i] = v;
      } else {
        u[i] = v;
      }
    }
    d = weight_scales<T, N>(w);
    if constexpr (kOffset) m = f16_lanes<N>([w](int i) { return w[i].m; });
  }

  // The N block terms for N consecutive activation blocks, in lanes 0..N-1.
  __m128 terms(const Act* a) const {
    __m256i p[kStep];
#pragma GCC unroll 4
    for (int i = 0; i < kStep; ++i) {
      if (i >= N) {
        p[i] = _mm256_setzero_si256();
        continue;
      }
      __m256i q = load256(a[i].qs);
      if constexpr (T::kSigned) q = _mm256_sign_epi8(q, s[i]);
      p[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(u[i], q), _mm256_set1_epi16(1));
    }
    // Lane i of each 128-bit half: half of block i's sum.
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    const __m128i sums = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    const __m128 da = f16_lanes<N>([a](int i) { return a[i].d; });
    __m128 t = _mm_mul_ps(_mm_mul_ps(d, da), _mm_cvtepi32_ps(sums));
    asm("" : "+x"(t));
    if constexpr (kOffset) {
      __m128 o = _mm_mul_ps(m, f16_lanes<N>([a](int i) { return a[i].s; }));
      asm("" : "+x"(o));
      t = _mm_add_ps(t, o);
    }
    return t;
  }
};

// Adds lanes 0..N-1 of t to sum, one after another.
template <int N>
inline void add_in_order(float& sum, __m128 t) {
  alignas(16) float f[kStep];
  _mm_store_ps(f, t);
#pragma GCC unroll 4
  for (int i = 0; i < N; ++i) sum += f[i];
}

// Blocks [b, b + N) of NR rows times NT tokens into sum.
template <typename T, int N, int NR, int NT>
inline void step(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t b, float (&sum)[NR][NT]) {
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
    Step<T, N> st;
    st.decode(reinterpret_cast<const typename T::Block*>(w + r * wrb) + b);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      add_in_order<N>(sum[r][t], st.terms(reinterpret_cast<const typename T::Act*>(act + t * arb) + b));
    }
  }
}

template <typename T, int NR, int NT>
void tile_fixed(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  const int64_t nb = k / kQK;
  float sum[NR][NT] = {};
  int64_t b = 0;
  for (; b + kStep <= nb; b += kStep) step<T, kStep>(w, wrb, act, arb, b, sum);
  for (; b < nb; ++b) step<T, 1>(w, wrb, act, arb, b, sum);
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = sum[r][t];
  }
}

// More than four tokens: each step of blocks decoded once per row for up to
// kPanelTokens tokens, the sums in memory.
using avx2::kPanelTokens;

template <typename T, int N, int NR>
inline void panel_step(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t nt, int64_t b,
                       float (&sum)[NR][kPanelTokens]) {
  for (int r = 0; r < NR; ++r) {
    Step<T, N> st;
    st.decode(reinterpret_cast<const typename T::Block*>(w + r * wrb) + b);
    for (int64_t t = 0; t < nt; ++t) {
      add_in_order<N>(sum[r][t], st.terms(reinterpret_cast<const typename T::Act*>(act + t * arb) + b));
    }
  }
}

template <typename T, int NR>
void tile_panel(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t nt, int64_t k, float* y,
                int64_t ys) {
  const int64_t nb = k / kQK;
  float sum[NR][kPanelTokens];
  for (int r = 0; r < NR; ++r) std::fill_n(sum[r], nt, 0.0f);
  int64_t b = 0;
  for (; b + kStep <= nb; b += kStep) panel_step<T, kStep>(w, wrb, act, arb, nt, b, sum);
  for (; b < nb; ++b) panel_step<T, 1>(w, wrb, act, arb, nt, b, sum);
  for (int64_t t = 0; t < nt; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = sum[r][t];
  }
}

template <typename T>
struct Steps {
  template <int NR, int NT>
  static void fixed(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
    tile_fixed<T, NR, NT>(w, wrb, act, arb, k, y, ys);
  }
  template <int NR>
  static void panel(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t nt, int64_t k, float* y,
                    int64_t ys) {
    tile_panel<T, NR>(w, wrb, act, arb, nt, k, y, ys);
  }
};

}  // namespace

const QuantDot* quant_dot_legacy_avx2(TensorType type) {
  // Q8_0: the AVX2 Q4_0 table's quantizer; Q8_1: the reference's.
  const QuantDot& q8_0 = *quant_dot_avx2(TensorType::Q4_0);
  const QuantDot& q8_1 = *quant_dot_legacy_ref(TensorType::Q4_1);
  static const QuantDot q4_1 = avx2::with_tiles<Steps<Q41>>(q8_1), q5_1 = avx2::with_tiles<Steps<Q51>>(q8_1),
                        q5_0 = avx2::with_tiles<Steps<Q50>>(q8_0), iq4_nl = avx2::with_tiles<Steps<IQ4NL>>(q8_0),
                        mxfp4 = avx2::with_tiles<Steps<MXFP4>>(q8_0);
  switch (type) {
    case TensorType::Q4_1:
      return &q4_1;
    case TensorType::Q5_1:
      return &q5_1;
    case TensorType::Q5_0:
      return &q5_0;
    case TensorType::IQ4_NL:
      return &iq4_nl;
    case TensorType::MXFP4:
      return &mxfp4;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
