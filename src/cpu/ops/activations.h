// Element-wise activations and the row softmax.
#pragma once

#include <cstdint>

namespace ferrite::cpu {

// x * sigmoid(x)
float silu(float x);
// tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
float gelu(float x);
float sigmoid(float x);

// Row by row over [n_rows, n]: y = silu(gate) * up (the SwiGLU of gated
// feed-forward layers); y may alias either. SiLU runs through
// VecOps::silu (llama.cpp's exp) per row.
void swiglu(const float* gate, const float* up, int64_t n_rows, int64_t n, float* y);
// One row of n.
inline void swiglu(const float* gate, const float* up, int64_t n, float* y) { swiglu(gate, up, 1, n, y); }
// y[i] = gelu(gate[i]) * up[i]
void geglu(const float* gate, const float* up, int64_t n, float* y);
// In place, row by row over [n_rows, n].
void silu_inplace(float* x, int64_t n_rows, int64_t n);
inline void silu_inplace(float* x, int64_t n) { silu_inplace(x, 1, n); }
void gelu_inplace(float* x, int64_t n);
// gpt-oss's clamped SwiGLU ("oai"), n elements: with g = min(gate, limit)
// (clamped above only) and u = min(max(up, -limit), limit),
//   y = g * sigmoid(alpha * g) * (u + 1)
// (gpt-oss: alpha 1.702, limit 7). y may alias either input.
void swiglu_oai(const float* gate, const float* up, int64_t n, float alpha, float limit, float* y);
// x = min(max(x, -c), c) (mpt's clamp_kqv; c > 0).
void clamp_inplace(float* x, int64_t n, float c);

// In-place softmax of one row: x = exp(x - max) / sum (exp and sum as
// VecOps::softmax_exp). Entries equal to -infinity get 0. A row of only
// -infinity becomes all zeros.
void softmax_inplace(float* x, int64_t n);
// The same with an attention sink: a logit `sink` that joins the maximum and
// the denominator (exp(sink - max) added after the row's sum) but gets no
// output of its own; sink -infinity: softmax_inplace(x, n) exactly.
void softmax_inplace(float* x, int64_t n, float sink);


}  // namespace ferrite::cpu
