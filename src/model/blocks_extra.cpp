#include "model/blocks_extra.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "cpu/activations.h"
#include "cpu/gelu_f16.h"
#include "cpu/matmul.h"
#include "cpu/norm.h"

namespace ferrite::model {

void apply_norm(NormKind kind, const HParams& hp, const Norm& norm, const float* x, int64_t n_rows, int64_t n,
                float* y) {
  if (kind == NormKind::Rms) {
    cpu::rms_norm(x, norm.w.f32(), hp.norm_rms_eps, n_rows, n, y);
    if (norm.b) {
      for (int64_t r = 0; r < n_rows; ++r) add_inplace(y + r * n, norm.b.f32(), n);
    }
  } else {
    cpu::layer_norm(x, norm.w.f32(), norm.b ? norm.b.f32() : nullptr, hp.norm_eps, n_rows, n, y);
  }
}

Norm bind_norm(const WeightBinder& b, const std::string& name, int64_t n) {
  return Norm{b.require_vec(name + ".weight", n), b.optional_vec(name + ".bias", n)};
}

Tensor bind_token_embd(const WeightBinder& b, HParams& hp) {
  const gguf::TensorInfo* embd = b.file().find_tensor("token_embd.weight");
  if (embd == nullptr) throw ModelError(b.file().path() + ": required tensor token_embd.weight is missing");
  hp.n_vocab = embd->ne[1];
  return b.require("token_embd.weight", {hp.n_embd, hp.n_vocab});
}

void add_position_embeddings(Step& s, const Tensor& pos_embd, float* x) {
  const int64_t n = s.batch.n_tokens;
  const int64_t n_embd = pos_embd.ne(0);
  const int64_t n_pos = pos_embd.ne(1);
  for (int64_t t = 0; t < n; ++t) {
    const int32_t p = s.batch.pos[t];
    if (p < 0 || p >= n_pos) {
      throw InvalidArgument("position " + std::to_string(p) + " is beyond the model's " + std::to_string(n_pos) +
                            " learned positions");
    }
  }
  // The rows of the positions, looked up like tokens: [n, n_embd].
  const ForwardBatch rows_of_pos{s.batch.pos, nullptr, n, nullptr, 0};
  Step lookup{s.hp, rows_of_pos, s.kv, s.pool, s.ws};
  float* pe = grow(s.ws.ffn_out, n * n_embd);
  embed_tokens(lookup, pos_embd, pe);
  add_inplace(x, pe, n * n_embd);
}

void scale_inplace(float* x, int64_t n, float c) {
  for (int64_t i = 0; i < n; ++i) x[i] *= c;
}

void feed_forward_gelu(Step& s, const FfnWeights& w, const float* h, int64_t n, float* out) {
  const int64_t n_ff = w.up.mat().n;
  float* up = grow(s.ws.ffn_b, n * n_ff);
  linear(s, w.up, w.up_b, h, n, up);
  if (w.gate) {
    float* gate = grow(s.ws.ffn_a, n * n_ff);
    linear(s, w.gate, w.gate_b, h, n, gate);
    cpu::geglu_f16(gate, up, n * n_ff, up);
  } else {
    cpu::gelu_f16_inplace(up, n * n_ff);
  }
  linear(s, w.down, w.down_b, up, n, out);
}

void feed_forward_fused_swiglu(Step& s, const Tensor& up, const Tensor& down, const float* h, int64_t n,
                               float* out) {
  const int64_t n_ff2 = up.mat().n;  // gate and up, side by side
  const int64_t n_ff = n_ff2 / 2;
  float* gu = grow(s.ws.ffn_b, n * n_ff2);
  float* act = grow(s.ws.ffn_a, n * n_ff);
  linear(s, up, Tensor{}, h, n, gu);
  for (int64_t t = 0; t < n; ++t) cpu::swiglu(gu + t * n_ff2, gu + t * n_ff2 + n_ff, n_ff, act + t * n_ff);
  linear(s, down, Tensor{}, act, n, out);
}

void output_head(Step& s, NormKind kind, const Norm& norm, const Tensor& output, const Tensor& output_b,
                 const float* x, float* logits) {
  if (s.batch.n_out == 0) return;
  float* rows = gather_output_rows(s, x);
  apply_norm(kind, s.hp, norm, rows, s.batch.n_out, s.hp.n_embd, rows);
  linear(s, output, output_b, rows, s.batch.n_out, logits);
  if (s.hp.final_softcap > 0.0f) {
    // As llama.cpp: scale by 1/cap, tanh, scale by cap.
    const float cap = s.hp.final_softcap, inv = 1.0f / cap;
    float* v = logits;
    for (int64_t i = 0; i < s.batch.n_out * s.hp.n_vocab; ++i) v[i] = std::tanh(v[i] * inv) * cap;
  }
}

}  // namespace ferrite::model
