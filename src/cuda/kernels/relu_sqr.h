// Squared ReLU on the GPU (nemotron's feed-forward activation): the twin of
// cpu/ops/relu_sqr.h, the same f32 compare and product per element, so the same
// bits (tests/cuda/relu_sqr_test.cpp).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace ferrite::cuda {

// x [n] = max(x, 0)^2, in place.
void relu_sqr(float* x, int64_t n, cudaStream_t s);

// x [n] = max(x, 0), in place (t5's feed-forward; twin of cpu/ops/relu_sqr.h relu_inplace).
void relu(float* x, int64_t n, cudaStream_t s);

}  // namespace ferrite::cuda
