// Host entry point of the LoRA kernel (lora.cu), asynchronous on `s`.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace ferrite::cuda {

// A LoRA term's last step (CPU twin cpu::lora_scale_add): y [n, n_out] +=
// scale(user[t]) * u [n, n_out], scale(s) = alpha != 0 ? s * alpha / rank : s;
// user [n] on the device; rows whose user scale is 0 unchanged.
void lora_scale_add(float* y, const float* u, int64_t n, int64_t n_out, const float* user, float alpha, int64_t rank,
                    cudaStream_t s);

}  // namespace ferrite::cuda
