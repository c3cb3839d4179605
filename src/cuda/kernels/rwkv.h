// RWKV's kernels (backend::RwkvSpec, backend/ops.h): the twins of cpu/recurrent/rwkv.h,
// run over a whole batch. The token shift and the wkv recurrences walk the
// tokens in batch order, each with the state of its slot (idx[t] indexes
// states of the batch's distinct sequences in device memory), so sequences
// interleaved in one batch each advance their own state. Tested against the
// CPU twins in tests/cuda/rwkv_test.cpp.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cpu/recurrent/rwkv.h"

namespace ferrite::cuda {

using cpu::RwkvAct;

// Twin of cpu::rwkv_shift (slot = idx): one thread per channel, tokens in order.
void rwkv_shift(const float* h, int64_t n, int64_t n_embd, const int32_t* idx, float* rows, int64_t row_stride,
                float* sx, cudaStream_t s);
// Twins of cpu::rwkv_mix, rwkv_act, rwkv_mul, rwkv6_decay, rwkv7_value_residual.
void rwkv_mix(const float* h, const float* sx, const float* lerp, const float* m, int64_t n, int64_t n_embd,
              float* out, cudaStream_t s);
void rwkv_act(RwkvAct act, float* x, int64_t count, cudaStream_t s);
void rwkv_mul(float* x, const float* y, int64_t count, cudaStream_t s);
void rwkv6_decay(float* w, const float* d0, int64_t n, int64_t n_embd, cudaStream_t s);
void rwkv7_value_residual(float* v, const float* v_first, const float* m, const float* v0, int64_t n,
                          int64_t n_embd, cudaStream_t s);
// Twins of cpu::rwkv7_prepare, rwkv7_bonus, rwkv_group_norm: one block per (token, head).
void rwkv7_prepare(const cpu::Rwkv7Vectors& p, int64_t n, int64_t n_embd, int64_t hs, float* dw, float* a,
                   float* k, float* kk, float* b, cudaStream_t s);
void rwkv7_bonus(float* y, const float* r, const float* k, const float* v, const float* r_k, int64_t n,
                 int64_t n_embd, int64_t hs, cudaStream_t s);
void rwkv_group_norm(float* y, int64_t n, int64_t n_embd, int64_t hs, float eps, const float* ln, const float* ln_b,
                     cudaStream_t s);

// Twins of cpu::rwkv_repeat_heads and rwkv_key_decay.
void rwkv_repeat_heads(const float* src, int64_t n, int64_t n_kv, int64_t group, int64_t hs, float* dst,
                       cudaStream_t s);
void rwkv_key_decay(float* k, const float* w, int64_t count, cudaStream_t s);

struct WkvDims {
  int64_t n = 0, n_head = 0, hs = 0;  // tokens, heads, head size (at most 1024)
  float scale = 1.0f;                 // the gated linear attention's (u null)
};
// cpu::rwkv_wkv6_token for every token t in order with the state states + idx[t] * n_head * hs * hs;
// r, k, v, w [n, n_head * hs], u [n_head * hs], y [n, n_head * hs]. One block per head, a thread per value.
// u null: cpu::rwkv_gla_token with d.scale instead.
void rwkv_wkv6(float* states, const int32_t* idx, const float* r, const float* k, const float* v, const float* w,
               const float* u, const WkvDims& d, float* y, cudaStream_t s);
// cpu::rwkv_wkv7_token likewise; r, w, k, v, a, b [n, n_head * hs]. One block per head, a thread per state row.
void rwkv_wkv7(float* states, const int32_t* idx, const float* r, const float* w, const float* k, const float* v,
               const float* a, const float* b, const WkvDims& d, float* y, cudaStream_t s);

}  // namespace ferrite::cuda
