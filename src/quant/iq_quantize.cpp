#include "quant/iq_quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/fp16.h"
#include "quant/quant_fit.h"

namespace ferrite::quant {
namespace {

constexpr int kScaleCandidates = 12;  // candidate sub-block scales
constexpr float kMagnitudeLo = 0.5f;  // max |t| maps to [lo, hi] x the top level
constexpr float kMagnitudeHi = 1.5f;
constexpr float kTernaryLo = 0.6f;    // IQ1: the top value is 1, most values sit inside
constexpr float kTernaryHi = 3.0f;
constexpr int kIqRefineRounds = 3;
constexpr int kSuperCandidates = 16;  // candidate super-scales
constexpr float kSuperLo = 0.70f;     // relative to the one fitting the largest scale
constexpr float kSuperHi = 1.10f;
constexpr int kCodeSearch = 1;        // codes tried each side of the rounded one
// The least-squares fit shrinks: the dequantized block q has gain
// g = <q,t>/<t,t> < 1 (0.85 for IQ1_S on a trained model). The super-scale is
// multiplied by g^-lay.gain_power (at most kMaxGain). On testbed-small
// (bench/QUALITY.md) KLD falls for every lattice type as the power goes 0 ->
// 0.75 (IQ1_S 0.422 -> 0.347); the plain RMSE rises with it, and the power of
// each type (kIqGainPower, or its own: IQ1_S, IQ2_XXS, IQ2_XS) keeps the RMSE
// bar against llama.cpp on the synth model.
constexpr double kMaxGain = 1.5;

// One sub-block being fitted: targets t (signs removed unless in the grid)
// and weights w of `len` values.
struct Sub {
  const float* t;
  const float* w;
  int len;
};

// Chooses the grid entries of every group of `s` for scale 1/id, with the
// delta sign fixed (`neg`: -1 none fixed = per group choice, 0/1 fixed).
// Writes entries and delta signs; returns sums for the least-squares scale.
void project_all(const Sub& s, const IqLayout& lay, float id, int fixed_neg, int* entry, bool* negd, double* stv,
                 double* svv) {
  const IqGrid& g = *lay.grid;
  const int m = g.group();
  float y[IqGrid::kMaxGroup];
  *stv = 0.0;
  *svv = 0.0;
  for (int k = 0; k < s.len / m; ++k) {
    const float* t = s.t + k * m;
    const float* w = s.w + k * m;
    for (int j = 0; j < m; ++j) y[j] = t[j] * id;
    bool neg = fixed_neg == 1;
    float err;
    int e;
    if (lay.delta == IqDelta::kNone) {
      e = g.project(y, w, 0.0f, &err);
    } else if (fixed_neg >= 0) {
      e = g.project(y, w, neg ? -lay.delta_size : lay.delta_size, &err);
    } else {
      float err_neg;
      e = g.project(y, w, lay.delta_size, &err);
      const int e_neg = g.project(y, w, -lay.delta_size, &err_neg);
      if (err_neg < err) {
        e = e_neg;
        neg = true;
      }
    }
    entry[k] = e;
    negd[k] = neg;
    const float off = lay.delta == IqDelta::kNone ? 0.0f : (neg ? -lay.delta_size : lay.delta_size);
    const float* v = g.values(e);
    for (int j = 0; j < m; ++j) {
      const double vj = static_cast<double>(v[j]) + off;
      *stv += static_cast<double>(w[j]) * t[j] * vj;
      *svv += static_cast<double>(w[j]) * vj * vj;
    }
  }
}

double sum_wtt(const Sub& s) {
  double r = 0.0;
  for (int i = 0; i < s.len; ++i) r += static_cast<double>(s.w[i]) * s.t[i] * s.t[i];
  return r;
}

struct FreeFit {
  double err = 0.0;
  float scale = 0.0f;
  float svv = 0.0f;  // how much the error grows per squared scale change
};

// Best free (float) scale of a sub-block with delta sign fixed_neg (see
// project_all). Writes the entries and delta signs of its groups.
FreeFit fit_free(const Sub& s, const IqLayout& lay, int fixed_neg, int* entry, bool* negd) {
  const int n_groups = s.len / lay.grid->group();
  const double wtt = sum_wtt(s);
  float amax = 0.0f;
  for (int i = 0; i < s.len; ++i) amax = std::max(amax, std::fabs(s.t[i]));
  FreeFit best;
  best.err = wtt;
  if (amax == 0.0f) {
    double stv, svv;
    project_all(s, lay, 0.0f, fixed_neg, entry, negd, &stv, &svv);
    return best;
  }
  int tmp_entry[kQKK / 4];
  bool tmp_neg[kQKK / 4];
  bool found = false;
  auto consider = [&](float id) {
    double stv, svv;
    project_all(s, lay, id, fixed_neg, tmp_entry, tmp_neg, &stv, &svv);
    if (svv <= 0.0 || stv <= 0.0) return false;
    const double e = wtt - stv * stv / svv;
    if (found && !(e < best.err)) return false;
    found = true;
    best.err = e;
    best.scale = static_cast<float>(stv / svv);
    best.svv = static_cast<float>(svv);
    std::copy(tmp_entry, tmp_entry + n_groups, entry);
    std::copy(tmp_neg, tmp_neg + n_groups, negd);
    return true;
  };
  const bool ternary = lay.signs == IqSigns::kInGrid;
  const float lo = ternary ? kTernaryLo : kMagnitudeLo, hi = ternary ? kTernaryHi : kMagnitudeHi;
  const float top = lay.grid->top_level();
  for (int k = 0; k < kScaleCandidates; ++k) {
    const float f = lo + (hi - lo) * static_cast<float>(k) / static_cast<float>(kScaleCandidates - 1);
    consider(top * f / amax);
  }
  for (int r = 0; r < kIqRefineRounds && found && best.scale > 0.0f; ++r) {
    if (!consider(1.0f / best.scale)) break;
  }
  if (!found) {  // nothing fits with a positive scale: everything to the smallest magnitude at scale 0
    double stv, svv;
    project_all(s, lay, 0.0f, fixed_neg, entry, negd, &stv, &svv);
    best.scale = 0.0f;
    best.err = wtt;
  }
  return best;
}

// Weighted error of a sub-block at the fixed scale `scale`; re-projects its
// groups (trying both delta signs where the delta is per sub-block).
double eval_fixed(const Sub& s, const IqLayout& lay, float scale, int* entry, bool* negd) {
  const IqGrid& g = *lay.grid;
  const int m = g.group();
  const int n_groups = s.len / m;
  if (scale <= 0.0f) return sum_wtt(s);
  const float id = 1.0f / scale;
  double best = std::numeric_limits<double>::infinity();
  int tmp_entry[kQKK / 4];
  bool tmp_neg[kQKK / 4];
  const int passes = lay.delta == IqDelta::kPerSubBlock ? 2 : 1;
  for (int p = 0; p < passes; ++p) {
    const int fixed = lay.delta == IqDelta::kPerSubBlock ? p : -1;
    double stv, svv;
    project_all(s, lay, id, fixed, tmp_entry, tmp_neg, &stv, &svv);
    // sum w (t - scale v)^2 = wtt - 2 scale stv + scale^2 svv
    const double e = sum_wtt(s) - 2.0 * scale * stv + static_cast<double>(scale) * scale * svv;
    if (e < best) {
      best = e;
      std::copy(tmp_entry, tmp_entry + n_groups, entry);
      std::copy(tmp_neg, tmp_neg + n_groups, negd);
    }
  }
  return best;
}

// Targets and stored signs from x.
void make_targets(const float* x, const float* w, const IqLayout& lay, float* t, IqSuperBlock& out) {
  for (int i = 0; i < kQKK; ++i) t[i] = lay.signs == IqSigns::kInGrid ? x[i] : std::fabs(x[i]);
  std::fill(out.sign, out.sign + kQKK / 8, 0);
  if (lay.signs == IqSigns::kInGrid) return;
  for (int k = 0; k < kQKK / 8; ++k) {
    uint8_t bits = 0;
    int n_neg = 0;
    int cheapest = 0;
    for (int j = 0; j < 8; ++j) {
      const int i = 8 * k + j;
      if (x[i] < 0.0f) {
        bits = static_cast<uint8_t>(bits | (1u << j));
        ++n_neg;
      }
      if (w[i] * x[i] * x[i] < w[8 * k + cheapest] * x[8 * k + cheapest] * x[8 * k + cheapest]) cheapest = j;
    }
    if (lay.signs == IqSigns::kEvenParity && (n_neg & 1)) {
      bits = static_cast<uint8_t>(bits ^ (1u << cheapest));
      t[8 * k + cheapest] = -t[8 * k + cheapest];
    }
    out.sign[k] = bits;
  }
}

// Per sub-block ±kCodeSearch around the rounded code at super-scale d.
double search_codes(const float* t, const float* w, const IqLayout& lay, float d, IqSuperBlock& r,
                    const float* free_scale) {
  const int n_sub = kQKK / lay.sub_len;
  const int gps = lay.sub_len / lay.grid->group();
  double total = 0.0;
  int tmp_entry[kQKK / 4];
  bool tmp_neg[kQKK / 4];
  for (int b = 0; b < n_sub; ++b) {
    const Sub s{t + b * lay.sub_len, w + b * lay.sub_len, lay.sub_len};
    const float unit = d * lay.alpha;
    const int c0 = unit > 0.0f ? round_clamp(free_scale[b] / unit - lay.beta, 0, lay.code_max) : 0;
    double best = std::numeric_limits<double>::infinity();
    for (int c = std::max(0, c0 - kCodeSearch); c <= std::min(lay.code_max, c0 + kCodeSearch); ++c) {
      const double e = eval_fixed(s, lay, unit * (static_cast<float>(c) + lay.beta), tmp_entry, tmp_neg);
      if (e < best) {
        best = e;
        r.code[b] = c;
        std::copy(tmp_entry, tmp_entry + gps, r.entry + b * gps);
        std::copy(tmp_neg, tmp_neg + gps, r.neg_delta + b * gps);
      }
    }
    total += best;
  }
  return total;
}

// The super-scale whose rounded codes best reproduce the free scales,
// weighting each sub-block by how much its error grows with the scale.
float choose_super_scale(const float* scale, const float* weight, int n_sub, const IqLayout& lay) {
  float smax = 0.0f;
  for (int b = 0; b < n_sub; ++b) smax = std::max(smax, scale[b]);
  if (smax <= 0.0f) return 0.0f;
  const float d0 = smax / (lay.alpha * (static_cast<float>(lay.code_max) + lay.beta));
  float best_d = d0;
  double best = std::numeric_limits<double>::infinity();
  auto consider = [&](float d) {
    double e = 0.0, num = 0.0, den = 0.0;
    const float unit = d * lay.alpha;
    for (int b = 0; b < n_sub; ++b) {
      const int c = round_clamp(scale[b] / unit - lay.beta, 0, lay.code_max);
      const double q = static_cast<double>(unit) * (c + lay.beta);
      e += weight[b] * (scale[b] - q) * (scale[b] - q);
      const double f = lay.alpha * (c + lay.beta);
      num += weight[b] * scale[b] * f;
      den += weight[b] * f * f;
    }
    if (e < best) {
      best = e;
      best_d = d;
    }
    return den > 0.0 ? static_cast<float>(num / den) : d;
  };
  for (int k = 0; k < kSuperCandidates; ++k) {
    const float f = kSuperLo + (kSuperHi - kSuperLo) * static_cast<float>(k) / static_cast<float>(kSuperCandidates - 1);
    consider(d0 * f);
  }
  const float refit = consider(best_d);
  if (refit > 0.0f) consider(refit);
  return best_d;
}

// Sums over the block of w t q, w q q and w t t, q the values `out` holds
// with super-scale d.
struct BlockSums {
  double tq = 0.0, qq = 0.0, tt = 0.0;
};
BlockSums block_sums(const float* t, const float* w, const IqLayout& lay, const IqSuperBlock& out, double d) {
  const int m = lay.grid->group();
  const int gps = lay.sub_len / m;
  BlockSums s;
  for (int k = 0; k < kQKK / m; ++k) {
    const double f = d * lay.alpha * (out.code[k / gps] + lay.beta);
    const float off = lay.delta == IqDelta::kNone ? 0.0f : (out.neg_delta[k] ? -lay.delta_size : lay.delta_size);
    const float* v = lay.grid->values(out.entry[k]);
    for (int j = 0; j < m; ++j) {
      const double q = f * (static_cast<double>(v[j]) + off);
      const float wj = w[k * m + j], tj = t[k * m + j];
      s.tq += wj * tj * q;
      s.qq += wj * q * q;
      s.tt += wj * tj * tj;
    }
  }
  return s;
}

// Scales out.d up by g^-lay.gain_power, g = <q,t>/<t,t> the weighted gain of the
// block as quantized (entries and codes unchanged).
void undo_shrinkage(const float* t, const float* w, const IqLayout& lay, IqSuperBlock& out) {
  const double d = fp16_to_fp32(out.d);
  const BlockSums s = block_sums(t, w, lay, out, d);
  if (!(s.tq > 0.0 && s.tt > 0.0)) return;
  const double k = std::min(kMaxGain, std::max(1.0, std::pow(s.tt / s.tq, lay.gain_power)));
  const uint16_t dh = fp32_to_fp16(static_cast<float>(d * k));
  if (std::isfinite(fp16_to_fp32(dh))) out.d = dh;  // near f16's top the scale stays as fitted
}

}  // namespace

void iq_quantize_super(const float* x, const float* w, const IqLayout& lay, IqSuperBlock& out) {
  float t[kQKK];
  make_targets(x, w, lay, t, out);
  const int n_sub = kQKK / lay.sub_len;
  const int gps = lay.sub_len / lay.grid->group();
  float scale[kQKK / 16], weight[kQKK / 16];
  for (int b = 0; b < n_sub; ++b) {
    const Sub s{t + b * lay.sub_len, w + b * lay.sub_len, lay.sub_len};
    int* entry = out.entry + b * gps;
    bool* negd = out.neg_delta + b * gps;
    FreeFit f;
    if (lay.delta == IqDelta::kPerSubBlock) {
      int e2[kQKK / 4];
      bool n2[kQKK / 4];
      f = fit_free(s, lay, 0, entry, negd);
      const FreeFit g = fit_free(s, lay, 1, e2, n2);
      if (g.err < f.err) {
        f = g;
        std::copy(e2, e2 + gps, entry);
        std::copy(n2, n2 + gps, negd);
      }
    } else {
      f = fit_free(s, lay, -1, entry, negd);
    }
    scale[b] = f.scale;
    weight[b] = f.svv + 1e-30f;
  }
  const float d = choose_super_scale(scale, weight, n_sub, lay);
  out.d = fp32_to_fp16(d);
  if (fp16_to_fp32(out.d) == 0.0f) {
    std::fill(out.code, out.code + n_sub, 0);
    return;  // entries from the free fit; every value dequantizes to 0
  }
  double total = search_codes(t, w, lay, fp16_to_fp32(out.d), out, scale);

  // Least-squares refit of d to the chosen codes and entries; kept if better.
  const BlockSums ls = block_sums(t, w, lay, out, 1.0);
  const double num = ls.tq, den = ls.qq;
  if (den > 0.0 && num > 0.0) {
    const uint16_t dh = fp32_to_fp16(static_cast<float>(num / den));
    if (dh != out.d) {
      IqSuperBlock trial = out;
      trial.d = dh;
      const double e = search_codes(t, w, lay, fp16_to_fp32(dh), trial, scale);
      if (e < total) out = trial;
    }
  }
  undo_shrinkage(t, w, lay, out);
}

}  // namespace ferrite::quant
