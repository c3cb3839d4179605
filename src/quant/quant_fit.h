// Scale searches shared by the quantizers: given a group of values x with
// importance weights w, find the scale (and offset) and integer levels that
// minimise sum w * (x - dequantized)^2. Each search tries many candidate
// scales, solves the least-squares scale for the levels each one rounds to,
// keeps the best, and refines by re-rounding until nothing improves.
#pragma once

#include <cstdint>
#include <vector>

namespace ferrite::quant {

// x ≈ d * L with integer L in [lmin, lmax] (lmin may be 0 or negative).
// Writes L (as int) and returns d (0 when every x is 0). The error
// sum w (x - d L)^2 is written to *err when err is non-null.
float fit_scale(const float* x, const float* w, int n, int lmin, int lmax, int* L, float* err = nullptr);

// How widely fit_affine searches: candidates each side of the nominal
// scale and their spacing in units of one level. The K-quants refine the
// result with their code search and do with the small default; a lone
// block (Q4_1, Q5_1) is worth a finer search.
struct AffineSearch {
  int candidates = 3;
  float step = 0.3f;
};

// x ≈ d * L + m with L in [0, lmax]. When `offset_nonpositive`, m is forced
// <= 0 (the K-quants store -m as an unsigned multiple of dmin). Writes L and
// *d, *m; returns the weighted squared error.
float fit_affine(const float* x, const float* w, int n, int lmax, bool offset_nonpositive, int* L, float* d, float* m,
                 AffineSearch search = {});

// x ≈ d * values[L], L an index into the sorted table `values` of `n_values`
// levels. Writes L, returns d.
float fit_table(const float* x, const float* w, int n, const int8_t* values, int n_values, int* L,
                float* err = nullptr);

// Index of the table value nearest to v (values sorted ascending).
int nearest_index(const int8_t* values, int n_values, float v);

// Rounds to nearest with ties away from zero and clamps to [lo, hi] (NaN
// gives lo). Inline: the scale searches call it for every candidate.
inline int round_clamp(float v, int lo, int hi) {
  const float flo = static_cast<float>(lo), fhi = static_cast<float>(hi);
  v = v > flo ? v : flo;
  v = v < fhi ? v : fhi;
  return static_cast<int>(v + (v < 0.0f ? -0.5f : 0.5f));
}

// Quantizes the sub-block scales s[0..n) to integer codes in [cmin, cmax]
// times one shared f16 scale (weights: how much each sub-block's scale
// matters). Writes the codes; returns the f16 bits of the shared scale.
uint16_t fit_sub_scales(const float* s, const float* weights, int n, int cmin, int cmax, int* codes);

// Fills w[0..n) with the weights a quantizer uses: 1 without an importance
// matrix (plain squared error), else sqrt(importance) * sqrt(sigma2 + x^2)
// where sigma2 is sigma_scale times the mean square of x[0..n). Q2_K takes
// sigma_scale 1 (quantize_k_affine.cpp), the other types 2.
void make_weights(const float* x, const float* importance, int n, float* w, float sigma_scale = 2.0f);

// make_weights over each 256-value super-block of a row of n values.
std::vector<float> super_block_weights(const float* x, int64_t n, const float* importance,
                                       float sigma_scale = 2.0f);

}  // namespace ferrite::quant
