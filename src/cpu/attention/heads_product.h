// A product per attention head with the head's own small matrix (multi-head
// latent attention's absorbed W_UK^T and W_UV, backend::MlaWeights):
//   out[t, h, j] = sum_i in[t, h, i] * W[h, j, i]
// for t < n, h < n_head, j < n_out, i < n_in; in and out are strided views
// (row t starts at t * row, head h at h * head further). W [n_head][n_out][n_in]
// is F32 or F16. The CUDA twin is cuda/kernels/heads_product.cu.
#pragma once

#include <cstdint>

#include "gguf/tensor_type.h"

namespace ferrite::cpu {

class ThreadPool;

struct HeadsProduct {
  const float* in = nullptr;
  int64_t in_row = 0, in_head = 0;
  const void* w = nullptr;
  TensorType w_type = TensorType::F32;
  int64_t n = 0, n_head = 0, n_in = 0, n_out = 0;
  float* out = nullptr;
  int64_t out_row = 0, out_head = 0;
};

// Each sum in ascending i, in f32. Throws InvalidArgument for another weight type.
void heads_product(const HeadsProduct& p, ThreadPool& pool);

}  // namespace ferrite::cpu
