// tanh in float, the same bits on every host and on the GPU (tanh_f32_impl.h
// says why and how): the soft-capping of attention scores and logits.
#pragma once

#include <cstdint>

namespace ferrite::cpu {

float tanh_f32(float x);

// x[i] = tanh_f32(x[i] * (1 / cap)) * cap: llama.cpp's soft-cap (scale,
// tanh, scale).
void softcap_f32(float* x, int64_t n, float cap);

}  // namespace ferrite::cpu
