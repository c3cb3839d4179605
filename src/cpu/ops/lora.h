// The last step of a LoRA term (backend/lora.h): y[t] += s_t * u[t] for the
// rows t of a product, s_t the token's user scale through the pair's alpha
// and rank (LoraWeight::scale). The CUDA kernel lora_scale_add
// (cuda/kernels/lora.cu) is its twin.
#pragma once

#include <cstdint>

namespace ferrite::cpu {

// y [n, n_out] += scale(user[t]) * u [n, n_out] row by row, where
// scale(s) = alpha != 0 ? s * alpha / rank : s; rows whose user scale is 0 are left alone.
void lora_scale_add(float* y, const float* u, int64_t n, int64_t n_out, const float* user, float alpha,
                    int64_t rank);

}  // namespace ferrite::cpu
