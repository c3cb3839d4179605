// Multi-head latent attention on the CPU (CpuBackend::mla_attention; the
// form and the cache row are described at backend::MlaSpec, ops.h):
//   q = W_q h (or W_qb norm(W_qa h)) [n, H, nope + rope]
//   c | k_pe = W_kva h; row = [rope(k_pe) | norm(c)]  -> the cache (as K and V)
//   q'_h = [rope(q_pe_h) | W_UK_h^T q_nope_h]          [n, H, rope + kv_lora]
//   o'_h = attention of q'_h over the rows (one KV head)
//   o_h = W_UV_h o'_h[rope:]; out = W_o [o_1 .. o_H]
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "cpu/attention/attention.h"
#include "cpu/backend/cpu_backend.h"
#include "cpu/attention/heads_product.h"
#include "cpu/ops/norm.h"
#include "cpu/ops/rope.h"

namespace ferrite::cpu {

void CpuBackend::mla_attention(const backend::MlaSpec& spec, backend::Act h_act, backend::Act out, bool accumulate) {
  const backend::MlaWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, H = spec.n_head, nope = spec.nope, rope = spec.n_rot, lat = spec.kv_lora;
  const int64_t qk = nope + rope, row = rope + lat;  // a query head as stored; a cache row
  if (dims_.n_embd_kv() != row || dims_.n_head_kv != 1) {
    throw InvalidArgument("latent attention: the cache rows hold " + std::to_string(dims_.n_embd_kv()) +
                          " values, not kv_lora_rank + rope = " + std::to_string(row));
  }
  const float* h = h_act.data;

  // 1. Queries [n, H * qk].
  float* q = grow(ws_.q, n * H * qk);
  if (w.wq_a) {
    const int64_t r = w.wq_a.rows();
    float* qa = grow(ws_.ffn_a, n * r);
    product(w.wq_a, backend::Weight{}, h, n, qa);
    rms_norm(qa, w.q_a_norm.f32(), dims_.norm_rms_eps, n, r, qa);
    product(w.wq_b, backend::Weight{}, qa, n, q);
  } else {
    product(w.wq, backend::Weight{}, h, n, q);
  }

  // 2. The latent rows [n, rope + lat]: k_pe first, then the normed c.
  float* kv = grow(ws_.ffn_b, n * (lat + rope));
  product(w.wkv_a, backend::Weight{}, h, n, kv);
  float* k = grow(ws_.k, n * row);
  for (int64_t t = 0; t < n; ++t) {
    std::copy_n(kv + t * (lat + rope) + lat, rope, k + t * row);
    rms_norm(kv + t * (lat + rope), w.kv_a_norm.f32(), dims_.norm_rms_eps, 1, lat, k + t * row + rope);
  }

  // 3. Absorbed queries [n, H, row]: q_pe, then W_UK_h^T q_nope_h.
  float* qa = grow(ws_.v, n * H * row);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t hh = 0; hh < H; ++hh) std::copy_n(q + (t * H + hh) * qk + nope, rope, qa + (t * H + hh) * row);
  }
  const HeadsProduct uk{.in = q, .in_row = H * qk, .in_head = qk, .w = w.wk_b.info->data, .w_type = w.wk_b.type(),
                        .n = n, .n_head = H, .n_in = nope, .n_out = lat, .out = qa + rope, .out_row = H * row,
                        .out_head = row};
  heads_product(uk, pool_);

  // 4. RoPE of the rotary parts (the first `rope` values of each head and row).
  if (spec.rope != backend::kNoRope) {
    const size_t r = static_cast<size_t>(spec.rope);
    rope_apply(ropes_[r], ws_.rope_cos[r].data(), ws_.rope_sin[r].data(), qa, n, H, row);
    rope_apply(ropes_[r], ws_.rope_cos[r].data(), ws_.rope_sin[r].data(), k, n, 1, row);
  }

  // 5. The rows into the cache as K and V, attention of every head over them.
  store_kv(spec.layer, k, k);
  float* o = grow(ws_.attn, n * H * row);
  AttentionArgs a;
  bind_cache(spec.layer, a);
  a.q = qa;
  a.kv_stride = row;
  a.n_kv = kv_->n_kv;
  a.mask = kv_->mask;
  a.kv_begin = kv_->kv_begin;
  a.kv_len = kv_->kv_len;
  a.mask_stride = kv_->mask_stride;
  a.n_tokens = n;
  a.n_head = H;
  a.n_head_kv = 1;
  a.head_dim = row;
  a.scale = spec.scale > 0.0f ? spec.scale : 1.0f / std::sqrt(static_cast<float>(qk));
  a.out = o;
  cpu::attention(a, pool_, ws_.attention);

  // 6. Per head W_UV_h o'_h (the latent part), then the output projection.
  float* ov = grow(ws_.q, n * H * spec.v_dim);  // q is no longer needed
  const HeadsProduct uv{.in = o + rope, .in_row = H * row, .in_head = row, .w = w.wv_b.info->data,
                        .w_type = w.wv_b.type(), .n = n, .n_head = H, .n_in = lat, .n_out = spec.v_dim, .out = ov,
                        .out_row = H * spec.v_dim, .out_head = spec.v_dim};
  heads_product(uv, pool_);
  product(w.wo, backend::Weight{}, ov, n, target(out, accumulate));
  finish(out, accumulate);
}

}  // namespace ferrite::cpu
