// Host entry of the per-head product kernel (heads_product.cu), the twin of
// cpu/attention/heads_product.h (same struct meaning, device pointers):
//   out[t, h, j] = sum_i in[t, h, i] * W[h, j, i]
// W [n_head][n_out][n_in] F32 or F16 (multi-head latent attention's absorbed
// matrices). One warp per output value; the sum in the warp's order (not
// the CPU's ascending one).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cpu/attention/heads_product.h"

namespace ferrite::cuda {

// Throws InvalidArgument for another weight type.
void heads_product(const cpu::HeadsProduct& p, cudaStream_t s);

}  // namespace ferrite::cuda
