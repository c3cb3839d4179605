// Quantizers of the symmetric super-block types: Q3_K, Q6_K (integer levels)
// and IQ4_XS / IQ4_NL (the non-linear IQ4 table). Each sub-block gets a
// weighted scale fit; the signed scales are quantized against one f16
// super-scale; then each code is searched ±1 with the levels re-rounded.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "quant/quant_fit.h"
#include "quant/quantize_ref.h"
#include "quant/round_levels.h"

namespace ferrite::quant::ref {

namespace {

constexpr int kCodeSearch = 1;   // codes tried each side of the rounded one
constexpr int kSuperRefits = 3;  // least-squares refits of the super-scale

struct SymLayout {
  int sub_len;
  int lmin, lmax;          // integer levels (ignored with a table)
  int code_min, code_max;  // sub-block scale codes
  const int8_t* table;     // non-null: levels are indices into this 16-value table
};

struct SymResult {
  uint16_t d;
  int codes[16];
  int L[kQKK];  // levels (or table indices)
};

double sub_error(const float* x, const float* w, const SymLayout& lay, float dl, int* L) {
  const float id = dl != 0.0f ? 1.0f / dl : 0.0f;
  float e = 0.0f;
  if (lay.table) {
    for (int i = 0; i < lay.sub_len; ++i) {
      L[i] = nearest_index(lay.table, 16, x[i] * id);
      const float diff = dl * static_cast<float>(lay.table[L[i]]) - x[i];
      e += w[i] * diff * diff;
    }
    return e;
  }
  // sum w (dl l - x)^2 = dl^2 sum w l^2 - 2 dl sum w x l + sum w x^2
  float wx[32];
  for (int i = 0; i < lay.sub_len; ++i) {
    wx[i] = w[i] * x[i];
    e += wx[i] * x[i];
  }
  const LevelSums s = round_levels(x, w, wx, lay.sub_len, id, 0.0f, lay.lmin, lay.lmax, L);
  return std::max(0.0f, dl * dl * s.sll - 2.0f * dl * s.sxl + e);
}

// For each sub-block, tries its code ±1 with levels re-rounded against the
// super-scale d; keeps the best. Returns the total weighted error.
double search_codes(const float* x, const float* w, const SymLayout& lay, float d, int* codes, int* L) {
  const int n_sub = kQKK / lay.sub_len;
  int trial[32];
  double total = 0.0;
  for (int j = 0; j < n_sub; ++j) {
    const float* xs = x + j * lay.sub_len;
    const float* ws = w + j * lay.sub_len;
    double best = -1.0;
    int best_c = codes[j];
    for (int dc = -kCodeSearch; dc <= kCodeSearch; ++dc) {
      const int c = codes[j] + dc;
      if (c < lay.code_min || c > lay.code_max) continue;
      const double e = sub_error(xs, ws, lay, d * static_cast<float>(c), trial);
      if (best < 0.0 || e < best) {
        best = e;
        best_c = c;
        std::copy(trial, trial + lay.sub_len, L + j * lay.sub_len);
      }
    }
    codes[j] = best_c;
    total += best;
  }
  return total;
}

void quantize_sym_super(const float* x, const float* w, const SymLayout& lay, SymResult& r) {
  const int n_sub = kQKK / lay.sub_len;
  float scale[16], weight[16];
  int L[kQKK];
  for (int j = 0; j < n_sub; ++j) {
    const float* xs = x + j * lay.sub_len;
    const float* ws = w + j * lay.sub_len;
    int* Ls = L + j * lay.sub_len;
    scale[j] = lay.table ? fit_table(xs, ws, lay.sub_len, lay.table, 16, Ls)
                         : fit_scale(xs, ws, lay.sub_len, lay.lmin, lay.lmax, Ls);
    double sl2 = 0.0;
    for (int i = 0; i < lay.sub_len; ++i) {
      const double v = lay.table ? lay.table[Ls[i]] : Ls[i];
      sl2 += ws[i] * v * v;
    }
    weight[j] = static_cast<float>(sl2) + 1e-30f;
  }
  r.d = fit_sub_scales(scale, weight, n_sub, lay.code_min, lay.code_max, r.codes);
  double total = search_codes(x, w, lay, fp16_to_fp32(r.d), r.codes, r.L);
  // Refit the super-scale to the chosen codes and levels; keep it if better.
  for (int round = 0; round < kSuperRefits; ++round) {
    double num = 0.0, den = 0.0;
    for (int i = 0; i < kQKK; ++i) {
      const double v = static_cast<double>(r.codes[i / lay.sub_len]) * (lay.table ? lay.table[r.L[i]] : r.L[i]);
      num += w[i] * x[i] * v;
      den += w[i] * v * v;
    }
    if (den <= 0.0) break;
    const uint16_t dh = fp32_to_fp16(static_cast<float>(num / den));
    if (dh == r.d) break;
    SymResult trial = r;
    trial.d = dh;
    const double e = search_codes(x, w, lay, fp16_to_fp32(dh), trial.codes, trial.L);
    if (!(e < total)) break;
    total = e;
    r = trial;
  }
}

}  // namespace

void quantize_q3_k(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockQ3_K*>(dst);
  const auto w = super_block_weights(x, n, importance);
  SymResult r;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    quantize_sym_super(x + i * kQKK, w.data() + i * kQKK, {16, -4, 3, -32, 31, nullptr}, r);
    b[i].d = r.d;
    std::memset(b[i].scales, 0, sizeof(b[i].scales));
    for (int j = 0; j < 16; ++j) {
      const int s = r.codes[j] + 32;  // 0..63
      b[i].scales[j < 8 ? j : j - 8] |= static_cast<uint8_t>((s & 0xF) << (j < 8 ? 0 : 4));
      b[i].scales[8 + j % 4] |= static_cast<uint8_t>((s >> 4) << (2 * (j / 4)));
    }
    std::memset(b[i].qs, 0, sizeof(b[i].qs));
    std::memset(b[i].hmask, 0, sizeof(b[i].hmask));
    for (int e = 0; e < kQKK; ++e) {
      const int q = r.L[e] + 4;  // 0..7
      const int half = e / 128, rem = e % 128, s = rem / 32;
      b[i].qs[32 * half + rem % 32] |= static_cast<uint8_t>((q & 3) << (2 * s));
      if (q & 4) b[i].hmask[rem % 32] |= static_cast<uint8_t>(1u << (4 * half + s));
    }
  }
}

void quantize_q6_k(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  const auto w = super_block_weights(x, n, importance);
  SymResult r;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    quantize_sym_super(x + i * kQKK, w.data() + i * kQKK, {16, -32, 31, -128, 127, nullptr}, r);
    b[i].d = r.d;
    for (int j = 0; j < 16; ++j) b[i].scales[j] = static_cast<int8_t>(r.codes[j]);
    std::memset(b[i].ql, 0, sizeof(b[i].ql));
    std::memset(b[i].qh, 0, sizeof(b[i].qh));
    for (int e = 0; e < kQKK; ++e) {
      const int q = r.L[e] + 32;  // 0..63
      const int half = e / 128, rem = e % 128, g = rem / 32, l = rem % 32;
      const int ql_index = 64 * half + (g & 1) * 32 + l;
      b[i].ql[ql_index] |= static_cast<uint8_t>((q & 0xF) << (g >= 2 ? 4 : 0));
      b[i].qh[32 * half + l] |= static_cast<uint8_t>((q >> 4) << (2 * g));
    }
  }
}

void quantize_iq4_xs(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockIQ4_XS*>(dst);
  const auto w = super_block_weights(x, n, importance);
  SymResult r;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    quantize_sym_super(x + i * kQKK, w.data() + i * kQKK, {32, 0, 0, -32, 31, kIq4nlValues.data()}, r);
    b[i].d = r.d;
    b[i].scales_h = 0;
    std::memset(b[i].scales_l, 0, sizeof(b[i].scales_l));
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = r.codes[ib] + 32;
      b[i].scales_l[ib / 2] |= static_cast<uint8_t>((ls & 0xF) << (4 * (ib % 2)));
      b[i].scales_h = static_cast<uint16_t>(b[i].scales_h | ((ls >> 4) << (2 * ib)));
      for (int j = 0; j < 16; ++j) {
        b[i].qs[16 * ib + j] = static_cast<uint8_t>(r.L[32 * ib + j] | (r.L[32 * ib + 16 + j] << 4));
      }
    }
  }
}

void quantize_iq4_nl(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockIQ4_NL*>(dst);
  std::vector<float> w(static_cast<size_t>(n));
  make_weights(x, importance, static_cast<int>(n), w.data());
  int L[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* xb = x + i * kQK;
    const float d = fit_table(xb, w.data() + i * kQK, kQK, kIq4nlValues.data(), 16, L);
    b[i].d = fp32_to_fp16(d);
    const float ds = fp16_to_fp32(b[i].d);
    const float id = ds != 0.0f ? 1.0f / ds : 0.0f;
    for (int j = 0; j < kQK; ++j) L[j] = nearest_index(kIq4nlValues.data(), 16, xb[j] * id);
    for (int j = 0; j < kQK / 2; ++j) b[i].qs[j] = static_cast<uint8_t>(L[j] | (L[j + kQK / 2] << 4));
  }
}

}  // namespace ferrite::quant::ref
