// llama4's element-wise steps on the GPU, each the twin of a CPU function
// (cpu/attention/attn_temperature.h) with the same f32 arithmetic per element
// (tests/cuda/llama4_ops_test.cpp).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace ferrite::cuda {

// q [n, width]: row t *= cpu::attn_temperature(pos[t], floor_scale, scale)
// (pos on the device). Twin of cpu::attn_temperature_scale.
void attn_temperature_scale(float* q, const int32_t* pos, int64_t n, int64_t width, float floor_scale, float scale,
                            cudaStream_t s);

// For each slot i: in[row[i]] [n] *= w[i], then w[i] = 1 (row, w on the
// device; rows distinct). Twin of cpu::moe_weight_inputs.
void moe_weight_inputs(float* in, const int32_t* row, float* w, int64_t slots, int64_t n, cudaStream_t s);

}  // namespace ferrite::cuda
