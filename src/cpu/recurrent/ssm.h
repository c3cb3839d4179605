// The Mamba-2 mixer's per-token kernels (backend::SsmSpec, backend/ops.h),
// plain f32 loops: the reference the CUDA kernels are tested against. One
// call advances one sequence by one token; the backend calls them in batch
// order with each token's own state.
#pragma once

#include <cstdint>

namespace ferrite::cpu {

// The causal depthwise convolution of one token: the window is the state's
// d_conv - 1 earlier inputs (oldest first, [d_conv - 1, ch]) then x [ch];
// out[c] = silu(b[c] + sum_k w[c * d_conv + k] * window[k][c]) (w: the GGUF
// tensor [d_conv, ch]). The state then drops its oldest row and keeps x.
void ssm_conv_token(float* state, const float* x, const float* w, const float* b, int64_t d_conv, int64_t ch,
                    float* out);

struct SsmScanArgs {
  int64_t n_head = 0, head_dim = 0, d_state = 0, n_group = 0;
  const float* dt_bias = nullptr;  // [n_head]
  const float* a = nullptr;        // [n_head], A = -exp(A_log)
  const float* d = nullptr;        // [n_head]
};

// One token of the selective scan. state [n_head, head_dim, d_state]; x
// [n_head * head_dim], dt [n_head] (before bias and softplus), B and C
// [n_group, d_state]; y [n_head * head_dim] = S_h C_g + D_h x_h after
//   S_h = exp(dt_h A_h) S_h + dt_h x_h B_g^T,  dt_h = softplus(dt_h + dt_bias_h),
// head h reading group h / (n_head / n_group).
void ssm_scan_token(const SsmScanArgs& a, float* state, const float* x, const float* dt, const float* B,
                    const float* C, float* y);

// y [d_inner] = rms_norm per group of d_inner / n_group (y * silu(z)) * w.
void ssm_gated_norm(float* y, const float* z, const float* w, int64_t d_inner, int64_t n_group, float eps);

}  // namespace ferrite::cpu
