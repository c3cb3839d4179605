#include "quant/quant_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/round_levels.h"

namespace ferrite::quant {
namespace {

constexpr int kCandidates = 3;       // candidate scales each side of the nominal one
constexpr float kCandidateStep = 0.3f;  // in units of one level
constexpr int kFitRefineRounds = 4;

}  // namespace

int nearest_index(const int8_t* values, int n_values, float v) {
  if (v <= values[0]) return 0;
  if (v >= values[n_values - 1]) return n_values - 1;
  int lo = 0, hi = n_values - 1;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < values[mid]) hi = mid; else lo = mid;
  }
  return (v - static_cast<float>(values[lo]) < static_cast<float>(values[hi]) - v) ? lo : hi;
}

float fit_scale(const float* x, const float* w, int n, int lmin, int lmax, int* L, float* err) {
  float amax = 0.0f, xm = 0.0f;
  float wx[256];
  float sum_wxx = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      xm = x[i];
    }
    wx[i] = w[i] * x[i];
    sum_wxx += wx[i] * x[i];
  }
  if (amax == 0.0f) {
    std::fill(L, L + n, 0);
    if (err) *err = 0.0f;
    return 0.0f;
  }
  int tmp[256];
  float best = std::numeric_limits<float>::infinity();
  float best_d = 0.0f;
  // Evaluates the levels rounded at iscale: the least-squares scale and
  // its error sum_wxx - sxl^2 / sll, compared without dividing.
  float best_sxl = 0.0f, best_sll = 1.0f;
  auto evaluate = [&](float iscale) {
    const LevelSums ls = round_levels(x, w, wx, n, iscale, 0.0f, lmin, lmax, tmp);
    const float sxl = ls.sxl, sll = ls.sll;
    if (sll <= 0.0f) return false;
    // sxl^2 / sll > best_sxl^2 / best_sll  <=>  smaller error
    if (std::isfinite(best) && sxl * sxl * best_sll <= best_sxl * best_sxl * sll) return false;
    best_sxl = sxl;
    best_sll = sll;
    best = sum_wxx - sxl * sxl / sll;
    best_d = sxl / sll;
    std::copy(tmp, tmp + n, L);
    return true;
  };
  // The largest-magnitude value maps near either extreme level.
  for (const int target : {lmin, lmax}) {
    if (target == 0) continue;
    for (int k = -kCandidates; k <= kCandidates; ++k) {
      const float t = static_cast<float>(target) + kCandidateStep * static_cast<float>(k) * (target > 0 ? 1.f : -1.f);
      if (t * static_cast<float>(target) <= 0.0f) continue;
      evaluate(t / xm);
    }
  }
  for (int r = 0; r < kFitRefineRounds && best_d != 0.0f; ++r) {
    if (!evaluate(1.0f / best_d)) break;
  }
  if (err) *err = std::max(0.0f, best);
  if (!std::isfinite(best)) {
    std::fill(L, L + n, 0);
    return 0.0f;
  }
  return best_d;
}

float fit_affine(const float* x, const float* w, int n, int lmax, bool offset_nonpositive, int* L, float* d_out,
                 float* m_out, AffineSearch search) {
  float xmin = x[0], xmax = x[0];
  float sw = 0.0f, sx = 0.0f, sxx = 0.0f;
  float wx[256];
  for (int i = 0; i < n; ++i) {
    xmin = std::min(xmin, x[i]);
    xmax = std::max(xmax, x[i]);
    wx[i] = w[i] * x[i];
    sw += w[i];
    sx += wx[i];
    sxx += wx[i] * x[i];
  }
  if (offset_nonpositive) xmin = std::min(xmin, 0.0f);
  if (xmax <= xmin) {
    std::fill(L, L + n, 0);
    *d_out = 0.0f;
    *m_out = xmin;
    double e = 0.0;
    for (int i = 0; i < n; ++i) e += static_cast<double>(w[i]) * (x[i] - xmin) * (x[i] - xmin);
    return static_cast<float>(e);
  }
  int tmp[256];
  float best = std::numeric_limits<float>::infinity();
  float best_d = 0.0f, best_m = xmin;
  auto solve = [&](float iscale, float origin) {
    const LevelSums ls = round_levels(x, w, wx, n, iscale, origin, 0, lmax, tmp);
    const float sl = ls.sl, sll = ls.sll, sxl = ls.sxl;
    float d = 0.0f, m = 0.0f;
    const float det = sw * sll - sl * sl;
    if (det > 0.0f) {
      d = (sw * sxl - sl * sx) / det;
      m = (sll * sx - sl * sxl) / det;
    } else {
      m = sw > 0 ? sx / sw : 0.0f;
    }
    if (offset_nonpositive && m > 0.0f) {
      m = 0.0f;
      d = sll > 0 ? sxl / sll : 0.0f;
    }
    // sum w (d l + m - x)^2 expanded over the sums.
    const float e = d * d * sll + 2.0f * d * m * sl + m * m * sw - 2.0f * d * sxl - 2.0f * m * sx + sxx;
    if (e < best) {
      best = e;
      best_d = d;
      best_m = m;
      std::copy(tmp, tmp + n, L);
      return true;
    }
    return false;
  };
  const float range = xmax - xmin;
  for (int k = -search.candidates; k <= search.candidates; ++k) {
    solve((static_cast<float>(lmax) + search.step * static_cast<float>(k)) / range, xmin);
  }
  for (int r = 0; r < kFitRefineRounds && best_d > 0.0f; ++r) {
    if (!solve(1.0f / best_d, best_m)) break;
  }
  *d_out = best_d;
  *m_out = best_m;
  return std::max(0.0f, best);
}

float fit_table(const float* x, const float* w, int n, const int8_t* values, int n_values, int* L, float* err) {
  float amax = 0.0f, xm = 0.0f;
  double sum_wxx = 0.0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      xm = x[i];
    }
    sum_wxx += static_cast<double>(w[i]) * x[i] * x[i];
  }
  if (amax == 0.0f) {
    const int zero = nearest_index(values, n_values, 0.0f);
    std::fill(L, L + n, zero);
    if (err) *err = 0.0f;
    return 0.0f;
  }
  int tmp[256];
  double best = std::numeric_limits<double>::infinity();
  float best_d = 0.0f;
  auto evaluate = [&](float d) {
    const float id = 1.0f / d;
    double sxv = 0.0, svv = 0.0;
    for (int i = 0; i < n; ++i) {
      tmp[i] = nearest_index(values, n_values, x[i] * id);
      const double v = values[tmp[i]];
      sxv += static_cast<double>(w[i]) * x[i] * v;
      svv += static_cast<double>(w[i]) * v * v;
    }
    if (svv <= 0.0) return;
    const double e = sum_wxx - sxv * sxv / svv;
    if (e < best) {
      best = e;
      best_d = static_cast<float>(sxv / svv);
      std::copy(tmp, tmp + n, L);
    }
  };
  for (const int target : {static_cast<int>(values[0]), static_cast<int>(values[n_values - 1])}) {
    const float step = static_cast<float>(std::abs(target)) / 48.0f;  // ~ a tenth of a level near the edge
    for (int k = -kCandidates; k <= kCandidates; ++k) {
      const float t = static_cast<float>(target) + step * static_cast<float>(k) * (target > 0 ? 1.f : -1.f);
      if (t * static_cast<float>(target) <= 0.0f) continue;
      evaluate(xm / t);
    }
  }
  for (int r = 0; r < kFitRefineRounds && best_d != 0.0f; ++r) {
    const double before = best;
    evaluate(best_d);
    if (!(best < before)) break;
  }
  if (err) *err = static_cast<float>(std::max(0.0, best));
  return best_d;
}

uint16_t fit_sub_scales(const float* s, const float* weights, int n, int cmin, int cmax, int* codes) {
  const float d = fit_scale(s, weights, n, cmin, cmax, codes);
  const uint16_t dh = fp32_to_fp16(d);
  const float ds = fp16_to_fp32(dh);
  const float id = ds != 0.0f ? 1.0f / ds : 0.0f;
  for (int j = 0; j < n; ++j) codes[j] = round_clamp(s[j] * id, cmin, cmax);
  return dh;
}

void make_weights(const float* x, const float* importance, int n, float* w, float sigma_scale) {
  if (importance == nullptr) {
    std::fill(w, w + n, 1.0f);
    return;
  }
  double sum2 = 0.0;
  for (int i = 0; i < n; ++i) sum2 += static_cast<double>(x[i]) * x[i];
  const float sigma2 = static_cast<float>(sigma_scale * sum2 / n);
  // The importance enters tempered (its square root): measured on the synth
  // model this keeps most of its effect while losing less plain RMSE. (The
  // full importance, llama.cpp's, did not lower KLD on the 24M testbed for
  // Q2_K, IQ2_XXS, IQ2_XS or IQ1_S: bench/QUALITY.md.)
  for (int i = 0; i < n; ++i) w[i] = std::sqrt(importance[i]) * std::sqrt(sigma2 + x[i] * x[i]);
}

std::vector<float> super_block_weights(const float* x, int64_t n, const float* importance, float sigma_scale) {
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i += kQKK) {
    make_weights(x + i, importance ? importance + i : nullptr, kQKK, w.data() + i, sigma_scale);
  }
  return w;
}

}  // namespace ferrite::quant
