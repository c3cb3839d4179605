#include "model/longrope.h"

#include <cmath>

namespace ferrite::model {

float longrope_attn_factor(int64_t n_ctx_train, int64_t n_ctx_orig) {
  if (n_ctx_orig <= 1 || n_ctx_train <= n_ctx_orig) return 1.0f;
  const double scale = static_cast<double>(n_ctx_train) / static_cast<double>(n_ctx_orig);
  return static_cast<float>(std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(n_ctx_orig))));
}

}  // namespace ferrite::model
