// Row driver of the IQ lattice quantizers: weights per super-block, the
// grid search, then a packing callback per super-block.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/blocks.h"
#include "quant/iq_quantize.h"
#include "quant/quant_fit.h"

namespace ferrite::quant {

// Calls pack(i, result) for super-block i of the row x[0..n).
template <typename Pack>
void for_each_super_block(const float* x, int64_t n, const float* importance, const IqLayout& lay, Pack&& pack) {
  float w[kQKK];
  IqSuperBlock r;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    make_weights(x + i * kQKK, importance ? importance + i * kQKK : nullptr, kQKK, w);
    iq_quantize_super(x + i * kQKK, w, lay, r);
    pack(i, r);
  }
}

}  // namespace ferrite::quant
