// NEON tiles with the int8 matrix multiply (SMMLA, FEAT_I8MM) for Q4_0 and
// Q8_0 weights (Q8_0 activations) and Q4_K, Q5_K, Q6_K, IQ4_XS (and Q2_K,
// Q3_K: the same code) with Q8_K activations: the prefill products. The
// dots and quantizers are the SDOT level's (quant_dot_neon()).
//
// vmmlaq_s32(acc, W, A) adds the 2 x 2 matrix of dot products of W's two
// 8-byte rows with A's: with W = [row 0 values j..j+7 | row 1 values j..j+7]
// and A the same for two tokens, one instruction does 32 multiply-adds (SDOT
// does 16), and the lanes are (row 0, token 0), (row 0, token 1), (row 1,
// token 0), (row 1, token 1). The integer sums are exact, so they equal the
// SDOT ones; the scales are applied lane by lane in the reference's
// expression (quant_decode_neon.h), and each lane adds its block terms in
// block order: every output equals quant_dot_ref.cpp's dot bit for bit.
//
// A tile of up to 4 x 4 is covered by pairs of rows and pairs of tokens (an
// odd last row or token is paired with itself and its duplicate lanes
// dropped); tiles one row high or one token wide (decode) take the SDOT tiles
// of quant_dot_neon.cpp / quant_dot_k_neon.cpp. The activation pairs are
// interleaved once per block and reused for every row pair.
#include <arm_neon.h>

#include <algorithm>
#include <cstdint>

#include "cpu/dot/quant_decode_neon.h"
#include "cpu/dot/quant_dot.h"

namespace ferrite::cpu {
namespace {

using neon::BlockQ8_0;
using neon::BlockQ8_K;
using quant::kQK;
using quant::kQKK;

using neon::kMaxTile;
constexpr int kMaxPairs = kMaxTile / 2;
constexpr int kRuns = neon::kRuns;

// The SMMLA operands of two registers (values j..j+15 of two rows): their
// first 8 values side by side, and their last 8.
inline int8x16_t zip_lo(int8x16_t x0, int8x16_t x1) {
  return vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(x0), vreinterpretq_s64_s8(x1)));
}
inline int8x16_t zip_hi(int8x16_t x0, int8x16_t x1) {
  return vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(x0), vreinterpretq_s64_s8(x1)));
}

// Two tokens' 16 values, interleaved for SMMLA.
struct ActPair {
  int8x16_t lo, hi;
};
inline ActPair act_pair(const int8_t* a0, const int8_t* a1) {
  const int8x16_t x0 = vld1q_s8(a0), x1 = vld1q_s8(a1);
  return {zip_lo(x0, x1), zip_hi(x0, x1)};
}

// acc + the 2 x 2 dot products of 16 values of rows w0, w1 with a token pair.
inline int32x4_t mmla16(int32x4_t acc, int8x16_t w0, int8x16_t w1, const ActPair& a) {
  return vmmlaq_s32(vmmlaq_s32(acc, zip_lo(w0, w1), a.lo), zip_hi(w0, w1), a.hi);
}

// [x0, x0, x1, x1] and [y0, y1, y0, y1]: a row pair's and a token pair's
// values in the lanes of an SMMLA result.
inline float32x4_t rows_f32(float x0, float x1) { return vcombine_f32(vdup_n_f32(x0), vdup_n_f32(x1)); }
inline float32x4_t tokens_f32(float y0, float y1) {
  const float32x2_t y = vset_lane_f32(y1, vdup_n_f32(y0), 1);
  return vcombine_f32(y, y);
}
inline int32x4_t rows_s32(int32_t x0, int32_t x1) { return vcombine_s32(vdup_n_s32(x0), vdup_n_s32(x1)); }

// The rows (or tokens) of a tile in pairs: entry 2p and 2p + 1 of pair p;
// past the tile's n the last one again.
struct Pairs {
  const uint8_t* p[kMaxTile];
  Pairs(const uint8_t* base, size_t stride, int64_t n) {
    for (int64_t i = 0; i < kMaxTile; ++i) p[i] = base + static_cast<size_t>(std::min(i, n - 1)) * stride;
  }
};

// Writes the lanes of pair sums that lie inside the nr x nt tile.
template <int NRP, int NTP>
void store_pairs(const float32x4_t (&sum)[NRP][NTP], int64_t nr, int64_t nt, float* y, int64_t ys) {
  for (int rp = 0; rp < NRP; ++rp) {
    for (int tp = 0; tp < NTP; ++tp) {
      float lanes[4];
      vst1q_f32(lanes, sum[rp][tp]);
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          const int64_t r = 2 * rp + i, t = 2 * tp + j;
          if (r < nr && t < nt) y[t * ys + r] = lanes[2 * i + j];
        }
      }
    }
  }
}

// ---------------------------------------------------------------- Q4_0 / Q8_0

template <typename Weights, int NRP, int NTP>
void q_pairs(const Pairs& rows, const Pairs& toks, int64_t nb, float32x4_t (&sum)[NRP][NTP]) {
  using Block = typename Weights::Block;
  for (int64_t b = 0; b < nb; ++b) {
    ActPair ap[NTP][2];
    float32x4_t da[NTP];
    for (int tp = 0; tp < NTP; ++tp) {
      const BlockQ8_0& a0 = reinterpret_cast<const BlockQ8_0*>(toks.p[2 * tp])[b];
      const BlockQ8_0& a1 = reinterpret_cast<const BlockQ8_0*>(toks.p[2 * tp + 1])[b];
      ap[tp][0] = act_pair(a0.qs, a1.qs);
      ap[tp][1] = act_pair(a0.qs + neon::kLanes, a1.qs + neon::kLanes);
      da[tp] = tokens_f32(neon::widen_f16(a0.d), neon::widen_f16(a1.d));
    }
    for (int rp = 0; rp < NRP; ++rp) {
      const Block& w0 = reinterpret_cast<const Block*>(rows.p[2 * rp])[b];
      const Block& w1 = reinterpret_cast<const Block*>(rows.p[2 * rp + 1])[b];
      const int8x16x2_t v0 = Weights::values(w0), v1 = Weights::values(w1);
      const float32x4_t dw = rows_f32(neon::widen_f16(w0.d), neon::widen_f16(w1.d));
      for (int tp = 0; tp < NTP; ++tp) {
        int32x4_t s = mmla16(vdupq_n_s32(0), v0.val[0], v1.val[0], ap[tp][0]);
        s = mmla16(s, v0.val[1], v1.val[1], ap[tp][1]);
        sum[rp][tp] = vaddq_f32(sum[rp][tp], vmulq_f32(vmulq_f32(dw, da[tp]), vcvtq_f32_s32(s)));
      }
    }
  }
}

// ---------------------------------------------------------------- K types, IQ4_XS

template <typename Kernel, int NRP, int NTP>
void k_pairs(const Pairs& rows, const Pairs& toks, int64_t nb, float32x4_t (&sum)[NRP][NTP]) {
  using Block = typename Kernel::Block;
  constexpr int kGroups = kRuns / Kernel::kRunsPerScale;
  for (int64_t b = 0; b < nb; ++b) {
    ActPair ap[NTP][kRuns];
    float32x4_t ad[NTP];
    for (int tp = 0; tp < NTP; ++tp) {
      const BlockQ8_K& a0 = reinterpret_cast<const BlockQ8_K*>(toks.p[2 * tp])[b];
      const BlockQ8_K& a1 = reinterpret_cast<const BlockQ8_K*>(toks.p[2 * tp + 1])[b];
      for (int r = 0; r < kRuns; ++r) ap[tp][r] = act_pair(a0.qs + neon::kLanes * r, a1.qs + neon::kLanes * r);
      ad[tp] = tokens_f32(a0.d, a1.d);
    }
    for (int rp = 0; rp < NRP; ++rp) {
      Kernel k0, k1;
      k0.decode(reinterpret_cast<const Block*>(rows.p[2 * rp])[b]);
      k1.decode(reinterpret_cast<const Block*>(rows.p[2 * rp + 1])[b]);
      const float32x4_t d = rows_f32(k0.d, k1.d);
      for (int tp = 0; tp < NTP; ++tp) {
        int32x4_t sumi = vdupq_n_s32(0);
#pragma GCC unroll 16
        for (int g = 0; g < kGroups; ++g) {
          int32x4_t p = vdupq_n_s32(0);
          for (int j = 0; j < Kernel::kRunsPerScale; ++j) {
            const int r = g * Kernel::kRunsPerScale + j;
            p = mmla16(p, k0.q[r], k1.q[r], ap[tp][r]);
          }
          sumi = vmlaq_s32(sumi, p, rows_s32(k0.scale(g), k1.scale(g)));
        }
        float32x4_t term = vmulq_f32(vmulq_f32(d, ad[tp]), vcvtq_f32_s32(sumi));
        if constexpr (Kernel::kHasMin) {
          const BlockQ8_K& a0 = reinterpret_cast<const BlockQ8_K*>(toks.p[2 * tp])[b];
          const BlockQ8_K& a1 = reinterpret_cast<const BlockQ8_K*>(toks.p[2 * tp + 1])[b];
          const int32_t summ[4] = {k0.summ(a0), k0.summ(a1), k1.summ(a0), k1.summ(a1)};
          term = vsubq_f32(term, vmulq_f32(vmulq_f32(rows_f32(k0.dmin, k1.dmin), ad[tp]),
                                           vcvtq_f32_s32(vld1q_s32(summ))));
        }
        sum[rp][tp] = vaddq_f32(sum[rp][tp], term);
      }
    }
  }
}

// ---------------------------------------------------------------- tiles

// The tile of one kind of pairs kernel (Q or K) for NRP x NTP pairs.
template <typename Kind, int NRP, int NTP>
void pair_tile(const uint8_t* w, size_t wrb, int64_t nr, const uint8_t* a, size_t arb, int64_t nt, int64_t k,
               float* y, int64_t ys) {
  float32x4_t sum[NRP][NTP];
  for (auto& row : sum) {
    for (auto& s : row) s = vdupq_n_f32(0.0f);
  }
  Kind::template run<NRP, NTP>(Pairs(w, wrb, nr), Pairs(a, arb, nt), k / Kind::kBlock, sum);
  store_pairs(sum, nr, nt, y, ys);
}

template <typename Weights>
struct QKind {
  static constexpr int64_t kBlock = kQK;
  template <int NRP, int NTP>
  static void run(const Pairs& rows, const Pairs& toks, int64_t nb, float32x4_t (&sum)[NRP][NTP]) {
    q_pairs<Weights>(rows, toks, nb, sum);
  }
};

template <typename Kernel>
struct KKind {
  static constexpr int64_t kBlock = kQKK;
  template <int NRP, int NTP>
  static void run(const Pairs& rows, const Pairs& toks, int64_t nb, float32x4_t (&sum)[NRP][NTP]) {
    k_pairs<Kernel>(rows, toks, nb, sum);
  }
};

using TileFn = void (*)(const uint8_t*, size_t, int64_t, const uint8_t*, size_t, int64_t, int64_t, float*, int64_t);

template <TensorType kType, typename Kind>
void tile(const uint8_t* w, size_t wrb, int64_t nr, const uint8_t* a, size_t arb, int64_t nt, int64_t k, float* y,
          int64_t ys) {
  if (nr == 1 || nt == 1) {
    static const TileFn sdot = quant_dot_neon(kType)->tile;
    return sdot(w, wrb, nr, a, arb, nt, k, y, ys);
  }
  static const TileFn table[kMaxPairs][kMaxPairs] = {
      {pair_tile<Kind, 1, 1>, pair_tile<Kind, 1, 2>},
      {pair_tile<Kind, 2, 1>, pair_tile<Kind, 2, 2>},
  };
  table[(nr + 1) / 2 - 1][(nt + 1) / 2 - 1](w, wrb, nr, a, arb, nt, k, y, ys);
}

// The SDOT level's entry (quantizer, dot) with the SMMLA tile.
template <TensorType kType, typename Kind>
QuantDot with_tile() {
  QuantDot q = *quant_dot_neon(kType);
  q.tile = tile<kType, Kind>;
  return q;
}

}  // namespace

const QuantDot* quant_dot_neon_i8mm(TensorType type) {
  static const QuantDot q4_0 = with_tile<TensorType::Q4_0, QKind<neon::Q40Block>>();
  static const QuantDot q8_0 = with_tile<TensorType::Q8_0, QKind<neon::Q80Block>>();
  static const QuantDot q2_k = with_tile<TensorType::Q2_K, KKind<neon::Q23K<false>>>();
  static const QuantDot q3_k = with_tile<TensorType::Q3_K, KKind<neon::Q23K<true>>>();
  static const QuantDot q4_k = with_tile<TensorType::Q4_K, KKind<neon::Q45K<false>>>();
  static const QuantDot q5_k = with_tile<TensorType::Q5_K, KKind<neon::Q45K<true>>>();
  static const QuantDot q6_k = with_tile<TensorType::Q6_K, KKind<neon::Q6K>>();
  static const QuantDot iq4_xs = with_tile<TensorType::IQ4_XS, KKind<neon::IQ4XS>>();
  switch (type) {
    case TensorType::Q4_0:
      return &q4_0;
    case TensorType::Q8_0:
      return &q8_0;
    case TensorType::Q2_K:
      return &q2_k;
    case TensorType::Q3_K:
      return &q3_k;
    case TensorType::Q4_K:
      return &q4_k;
    case TensorType::Q5_K:
      return &q5_k;
    case TensorType::Q6_K:
      return &q6_k;
    case TensorType::IQ4_XS:
      return &iq4_xs;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
