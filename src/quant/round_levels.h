// The inner loop of every scale search: round x to integer levels at a
// candidate scale and accumulate the sums the least-squares fit needs.
// A plain reference and an AVX-512 version (chosen at run time).
#pragma once

#include <cstdint>

namespace ferrite::quant {

struct LevelSums {
  float sl;   // sum w l
  float sll;  // sum w l^2
  float sxl;  // sum wx l
};

// L_i = round_clamp(iscale * (x_i - origin), lo, hi) (ties away from zero,
// NaN -> lo) for i < n; returns the sums over w, wx (= w * x).
using RoundLevelsFn = LevelSums (*)(const float* x, const float* w, const float* wx, int n, float iscale,
                                    float origin, int lo, int hi, int* L);

LevelSums round_levels_ref(const float* x, const float* w, const float* wx, int n, float iscale, float origin,
                           int lo, int hi, int* L);
namespace avx512 {
LevelSums round_levels(const float* x, const float* w, const float* wx, int n, float iscale, float origin, int lo,
                       int hi, int* L);
}

// The fastest version this CPU runs under the dispatch cap (dequant_level()).
RoundLevelsFn round_levels_fn();

inline LevelSums round_levels(const float* x, const float* w, const float* wx, int n, float iscale, float origin,
                              int lo, int hi, int* L) {
  return round_levels_fn()(x, w, wx, n, iscale, origin, lo, hi, L);
}

}  // namespace ferrite::quant
