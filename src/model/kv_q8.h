// Rows of a q8_0 KV cache (quant::BlockQ8_0, 32 values per block): the byte
// size of a row and its conversion to f32 / f16 (x = d * q).
#pragma once

#include <cstdint>

#include "core/fp16.h"
#include "quant/blocks.h"

namespace ferrite::model {

constexpr int64_t kQ8Block = quant::kQK;
constexpr int64_t kQ8BlockBytes = sizeof(quant::BlockQ8_0);

// n: values in the row (a multiple of kQ8Block). out[i * stride] = x[i].
inline void q8_0_row_to_f32(const uint8_t* row, int64_t n, float* out) {
  const auto* b = reinterpret_cast<const quant::BlockQ8_0*>(row);
  for (int64_t i = 0; i < n / kQ8Block; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    for (int64_t j = 0; j < kQ8Block; ++j) out[i * kQ8Block + j] = d * static_cast<float>(b[i].qs[j]);
  }
}

inline void q8_0_row_to_f16(const uint8_t* row, int64_t n, uint16_t* out, int64_t stride) {
  const auto* b = reinterpret_cast<const quant::BlockQ8_0*>(row);
  for (int64_t i = 0; i < n / kQ8Block; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    for (int64_t j = 0; j < kQ8Block; ++j) {
      out[(i * kQ8Block + j) * stride] = fp32_to_fp16(d * static_cast<float>(b[i].qs[j]));
    }
  }
}

}  // namespace ferrite::model
