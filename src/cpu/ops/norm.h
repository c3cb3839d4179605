// Normalisations over the last dimension of row-major [n_rows, n] data.
// Squares are formed in f32 and summed in double, as llama.cpp does.
#pragma once

#include <cstdint>

namespace ferrite::cpu {

// y = x / sqrt(mean(x^2) + eps) * weight  (weight may be nullptr: no scaling).
// x and y may alias.
void rms_norm(const float* x, const float* weight, float eps, int64_t n_rows, int64_t n, float* y);

// y = (x - mean) / sqrt(var + eps) * weight + bias (either may be nullptr).
void layer_norm(const float* x, const float* weight, const float* bias, float eps, int64_t n_rows, int64_t n,
                float* y);

}  // namespace ferrite::cpu
