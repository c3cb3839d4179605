// Squared ReLU, x = max(x, 0)^2, in place (nemotron's feed-forward
// activation; llama.cpp computes it as ggml_sqr(ggml_relu(x)) in f32). The
// reference and the only CPU form: a compare and a product per element,
// which the compiler vectorises; the CUDA kernel (cuda/kernels/relu_sqr.h)
// is tested against it.
#pragma once

#include <cstdint>

namespace ferrite::cpu {

void relu_sqr_inplace(float* x, int64_t n);

// ReLU, x = max(x, 0), in place (t5's feed-forward; the CUDA twin is
// cuda/kernels/relu_sqr.h relu).
void relu_inplace(float* x, int64_t n);

}  // namespace ferrite::cpu
