#include "quant/round_levels.h"

#include "quant/quant_fit.h"
#include "quant/type_traits.h"

namespace ferrite::quant {

LevelSums round_levels_ref(const float* x, const float* w, const float* wx, int n, float iscale, float origin,
                           int lo, int hi, int* L) {
  LevelSums s{0.0f, 0.0f, 0.0f};
  for (int i = 0; i < n; ++i) {
    const int l = round_clamp(iscale * (x[i] - origin), lo, hi);
    L[i] = l;
    const auto fl = static_cast<float>(l);
    s.sl += w[i] * fl;
    s.sll += w[i] * fl * fl;
    s.sxl += wx[i] * fl;
  }
  return s;
}

RoundLevelsFn round_levels_fn() {
  return dequant_level() == DequantCap::kAvx512 ? avx512::round_levels : round_levels_ref;
}

}  // namespace ferrite::quant
