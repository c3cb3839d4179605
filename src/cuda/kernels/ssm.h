// The Mamba-2 mixer's kernels (backend::SsmSpec, backend/ops.h): the twins of
// cpu/recurrent/ssm.h, run over a whole batch. Tokens go in batch order, each with
// the state of its slot (states [n_slots, ...] in device memory), so that
// several sequences interleaved in one batch each advance their own state:
// one thread per channel (conv) or per head row (scan) walks the tokens in
// order. Tested against the CPU twins in tests/cuda/ssm_test.cpp.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace ferrite::cuda {

// Twin of cpu::ssm_conv_token for every token t: reads in[t * in_stride + c]
// (c < ch), writes out[t * ch + c]; state of token t: states + slot[t] * (d_conv - 1) * ch.
void ssm_conv(float* states, const int32_t* slot, const float* in, int64_t in_stride, const float* w,
              const float* b, int64_t n, int64_t d_conv, int64_t ch, float* out, cudaStream_t s);

struct SsmScanDims {
  int64_t n_head = 0, head_dim = 0, d_state = 0, n_group = 0;
};

// Twin of cpu::ssm_scan_token for every token t: x, B, C from xbc [n, ch]
// (x at 0, B at d_inner, C at d_inner + n_group d_state), dt from
// dt[t * dt_stride + h]; y [n, d_inner]; state of token t: states + slot[t] * d_inner * d_state.
void ssm_scan(float* states, const int32_t* slot, const float* xbc, int64_t ch, const float* dt, int64_t dt_stride,
              const float* dt_bias, const float* a, const float* d, const SsmScanDims& dims, int64_t n, float* y,
              cudaStream_t s);

// Twin of cpu::ssm_gated_norm for every row t: y[t] with gate z[t * z_stride ..].
void ssm_gated_norm(float* y, const float* z, int64_t z_stride, const float* w, int64_t n, int64_t d_inner,
                    int64_t n_group, float eps, cudaStream_t s);

}  // namespace ferrite::cuda
