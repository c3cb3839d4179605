// RWKV's per-token kernels (backend::RwkvSpec, backend/ops.h), plain f32
// loops: the reference the CUDA kernels (cuda/kernels/rwkv.h) are tested
// against. The backend (cpu/backend/cpu_rwkv.cpp) calls them in batch order
// with each token's own state.
#pragma once

#include <cstdint>

namespace ferrite::cpu {

// The token shift of a batch: for t in order, sx[t] = row - h[t] with row
// the state row of token t's slot (rows + slot[t] * row_stride), which then
// holds h[t] (the next token of the same sequence reads it). h, sx [n, n_embd].
void rwkv_shift(const float* h, int64_t n, int64_t n_embd, const int32_t* slot, float* rows, int64_t row_stride,
                float* sx);

// out[t] = h[t] + sx[t] * (lerp + (m ? m[t] : 0)) for n rows of n_embd.
void rwkv_mix(const float* h, const float* sx, const float* lerp, const float* m, int64_t n, int64_t n_embd,
              float* out);

// In place over count values: tanh, sigmoid, silu (x sigmoid(x)), relu(x)^2.
enum class RwkvAct { Tanh, Sigmoid, Silu, ReluSqr };
void rwkv_act(RwkvAct act, float* x, int64_t count);

// x *= y over count values.
void rwkv_mul(float* x, const float* y, int64_t count);

// rwkv6's decay over [n, n_embd]: w = exp(-exp(w + d0)).
void rwkv6_decay(float* w, const float* d0, int64_t n, int64_t n_embd);

// rwkv7's value residual over [n, n_embd]: v += (v_first - v) sigmoid(m + v0).
void rwkv7_value_residual(float* v, const float* v_first, const float* m, const float* v0, int64_t n,
                          int64_t n_embd);

// rwkv7's wkv inputs over [n, n_embd] (heads of hs), from the LoRA outputs
// dw (decay) and a (in-context learning rate) and the key k:
//   w = exp(-0.606531 sigmoid(dw + w0)), a = sigmoid(a + a0),
//   kk = k k_k L2-normed per head (eps 1e-12), k *= 1 + (a - 1) k_a,
//   then kk := -kk and b = kk_normed * a (the wkv's a and b).
struct Rwkv7Vectors {
  const float *w0 = nullptr, *a0 = nullptr, *k_k = nullptr, *k_a = nullptr;
};
void rwkv7_prepare(const Rwkv7Vectors& p, int64_t n, int64_t n_embd, int64_t hs, float* dw, float* a, float* k,
                   float* kk, float* b);

// rwkv7's bonus over [n, n_embd]: per head y += (sum_i r_i k_i r_k,i) v.
void rwkv7_bonus(float* y, const float* r, const float* k, const float* v, const float* r_k, int64_t n,
                 int64_t n_embd, int64_t hs);

// rwkv6's wkv for one token: state [n_head, hs (key i), hs (value j)],
// r, k, v, w (the decay, already exp(-exp(.))) [n_head * hs], u [n_head * hs];
// y_j = sum_i r_i (S_ij + u_i k_i v_j), then S_ij = w_i S_ij + k_i v_j.
void rwkv_wkv6_token(int64_t n_head, int64_t hs, float* state, const float* r, const float* k, const float* v,
                     const float* w, const float* u, float* y);

// rwkv6qwen2's gated linear attention for one token (rwkv6's layout):
// S_ij = w_i S_ij + k_i v_j, then y_j = scale sum_i r_i S_ij.
void rwkv_gla_token(int64_t n_head, int64_t hs, float* state, const float* r, const float* k, const float* v,
                    const float* w, float scale, float* y);

// dst [n, n_kv * group * hs]: head h of each row is src's head h / group ([n, n_kv * hs]).
void rwkv_repeat_heads(const float* src, int64_t n, int64_t n_kv, int64_t group, int64_t hs, float* dst);

// k -= k * w over count values (rwkv6qwen2's key).
void rwkv_key_decay(float* k, const float* w, int64_t count);

// rwkv7's wkv for one token: state [n_head, hs (value i), hs (key j)];
// sa_i = sum_j a_j S_ij, S_ij = S_ij w_j + v_i k_j + sa_i b_j, y_i = sum_j S_ij r_j.
void rwkv_wkv7_token(int64_t n_head, int64_t hs, float* state, const float* r, const float* w, const float* k,
                     const float* v, const float* a, const float* b, float* y);

// Each row of y [n, n_embd] LayerNorm-ed per head of hs (no weight, eps), then * ln + ln_b.
void rwkv_group_norm(float* y, int64_t n, int64_t n_embd, int64_t hs, float eps, const float* ln, const float* ln_b);

}  // namespace ferrite::cpu
