// RWKV's time and channel mixes on the CPU (CpuBackend::rwkv_time_mix,
// rwkv_channel_mix; backend::RwkvSpec in ops.h): the products for the whole
// batch, the token shift and the wkv recurrence token by token in batch
// order with each token's state (KvView::rs; the kernels of cpu/recurrent/rwkv.h).
#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "cpu/backend/cpu_backend.h"
#include "cpu/recurrent/rwkv.h"

namespace ferrite::cpu {
namespace {

// Consecutive [n, cols] pieces of one scratch vector.
class Carve {
 public:
  Carve(std::vector<float>& v, int64_t total) : p_(grow(v, total)) {}
  float* take(int64_t count) {
    float* r = p_;
    p_ += count;
    return r;
  }

 private:
  float* p_;
};

// dst[t] = src[t * stride + off .. + cols] for n rows.
void gather_cols(const float* src, int64_t n, int64_t stride, int64_t off, int64_t cols, float* dst) {
  for (int64_t t = 0; t < n; ++t) std::copy_n(src + t * stride + off, cols, dst + t * cols);
}

}  // namespace

const backend::RecurrentLayer& CpuBackend::rwkv_state(const backend::RwkvSpec& spec) const {
  const backend::RecurrentView* rs = kv_ != nullptr ? kv_->rs : nullptr;
  const auto layer = static_cast<size_t>(spec.layer);
  if (rs == nullptr || rs->slot == nullptr || layer >= rs->layers.size() || rs->layers[layer].conv == nullptr ||
      rs->layers[layer].ssm == nullptr) {
    throw InvalidArgument("RWKV layer " + std::to_string(spec.layer) + " has no recurrent state in this step");
  }
  return rs->layers[layer];
}

void CpuBackend::rwkv_time_mix(const backend::RwkvSpec& spec, backend::Act h, backend::Act out,
                               backend::Act v_first, bool accumulate) {
  const backend::RecurrentLayer& st = rwkv_state(spec);
  const int64_t n = batch_->n_tokens, e = spec.n_embd;
  float* sx = grow(ws_.ffn_out, n * e);
  rwkv_shift(h.data, n, e, kv_->rs->slot, st.conv, spec.n_shift * e, sx);
  float* y = grow(ws_.ffn_b, n * e);
  if (spec.version == 7) {
    rwkv7_time_mix(spec, h.data, sx, v_first.data, y);
  } else {
    rwkv6_time_mix(spec, h.data, sx, y);
  }
  product(spec.w->output, backend::Weight{}, y, n, target(out, accumulate));
  finish(out, accumulate);
}

void CpuBackend::rwkv6_time_mix(const backend::RwkvSpec& spec, const float* h, const float* sx, float* y) {
  const backend::RwkvWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, e = spec.n_embd, hs = spec.head_size, nh = spec.n_head();
  const int64_t extra = w.w2[0].cols(), lora = w.w1.rows(), dextra = w.decay_w1.rows();
  Carve c(ws_.rwkv, n * (8 * e + lora + extra + dextra));
  float *xx = c.take(n * e), *t = c.take(n * lora), *g1 = c.take(n * extra), *m = c.take(n * e);
  float *r = c.take(n * e), *k = c.take(n * e), *v = c.take(n * e), *g = c.take(n * e), *dw = c.take(n * e);
  float* dt = c.take(n * dextra);
  // The data-dependent mixes: x_j = h + sx * (lerp_j + w2_j tanh(w1 (h + sx lerp_x))_j).
  rwkv_mix(h, sx, w.lerp_x.f32(), nullptr, n, e, xx);
  product(w.w1, backend::Weight{}, xx, n, t);
  rwkv_act(RwkvAct::Tanh, t, n * lora);
  float* dest[5] = {dw, k, v, r, g};  // w, k, v, r, g
  const backend::Weight none;
  const backend::Weight* proj[5] = {nullptr, &w.key, &w.value, &w.receptance, &w.gate};
  const backend::Weight* bias[5] = {&none, &w.key_b, &w.value_b, &w.receptance_b, &none};
  const bool qrwkv = spec.qrwkv();
  const int64_t n_kv = spec.n_kv_head();
  for (int j = 0; j < 5; ++j) {
    gather_cols(t, n, lora, j * extra, extra, g1);
    product(w.w2[j], none, g1, n, m);
    rwkv_mix(h, sx, w.lerp[j].f32(), m, n, e, xx);
    if (proj[j] == nullptr) {
      // The decay: exp(-exp(decay + decay_w2 tanh(decay_w1 xw))).
      product(w.decay_w1, none, xx, n, dt);
      rwkv_act(RwkvAct::Tanh, dt, n * dextra);
      product(w.decay_w2, none, dt, n, dw);
      rwkv6_decay(dw, w.decay.f32(), n, e);
    } else if ((j == 1 || j == 2) && n_kv != nh) {  // rwkv6qwen2's grouped k, v
      product(*proj[j], *bias[j], xx, n, m);
      rwkv_repeat_heads(m, n, n_kv, nh / n_kv, hs, dest[j]);
    } else {
      product(*proj[j], *bias[j], xx, n, dest[j]);
    }
  }
  rwkv_act(qrwkv ? RwkvAct::Sigmoid : RwkvAct::Silu, g, n * e);
  if (qrwkv) rwkv_key_decay(k, dw, n * e);
  const backend::RecurrentLayer& st = rwkv_state(spec);
  const int64_t sf = e * hs;
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hs)));
  for (int64_t tk = 0; tk < n; ++tk) {
    const int64_t o = tk * e;
    float* S = st.ssm + kv_->rs->slot[tk] * sf;
    if (qrwkv) {
      rwkv_gla_token(nh, hs, S, r + o, k + o, v + o, dw + o, scale, y + o);
    } else {
      rwkv_wkv6_token(nh, hs, S, r + o, k + o, v + o, dw + o, w.first.f32(), y + o);
    }
  }
  if (!qrwkv) rwkv_group_norm(y, n, e, hs, spec.gn_eps, w.ln.f32(), w.ln_b.f32());
  rwkv_mul(y, g, n * e);
}

void CpuBackend::rwkv7_time_mix(const backend::RwkvSpec& spec, const float* h, const float* sx, float* v_first,
                                float* y) {
  const backend::RwkvWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, e = spec.n_embd, hs = spec.head_size, nh = spec.n_head();
  const int64_t rank = std::max({w.d1.rows(), w.a1.rows(), w.v1 ? w.v1.rows() : 0, w.g1 ? w.g1.rows() : 0});
  Carve c(ws_.rwkv, n * (9 * e + rank));
  float *xx = c.take(n * e), *t = c.take(n * rank), *r = c.take(n * e), *dw = c.take(n * e), *k = c.take(n * e);
  float *v = c.take(n * e), *a = c.take(n * e), *g = c.take(n * e), *kk = c.take(n * e), *b = c.take(n * e);
  const backend::Weight none;
  auto lora = [&](const backend::Weight& l1, const backend::Weight& l2, const RwkvAct* act, float* dst) {
    product(l1, none, xx, n, t);
    if (act != nullptr) rwkv_act(*act, t, n * l1.rows());
    product(l2, none, t, n, dst);
  };
  const RwkvAct tanh_act = RwkvAct::Tanh, sigmoid_act = RwkvAct::Sigmoid;
  rwkv_mix(h, sx, w.lerp[0].f32(), nullptr, n, e, xx);
  product(w.receptance, none, xx, n, r);
  rwkv_mix(h, sx, w.lerp[1].f32(), nullptr, n, e, xx);
  lora(w.d1, w.d2, &tanh_act, dw);
  rwkv_mix(h, sx, w.lerp[2].f32(), nullptr, n, e, xx);
  product(w.key, none, xx, n, k);
  rwkv_mix(h, sx, w.lerp[3].f32(), nullptr, n, e, xx);
  product(w.value, none, xx, n, v);
  if (spec.layer == 0) {
    std::copy_n(v, n * e, v_first);
  } else {
    lora(w.v1, w.v2, nullptr, b);  // the value residual's mix
    rwkv7_value_residual(v, v_first, b, w.v0.f32(), n, e);
  }
  rwkv_mix(h, sx, w.lerp[4].f32(), nullptr, n, e, xx);
  lora(w.a1, w.a2, nullptr, a);
  if (w.g1) {
    rwkv_mix(h, sx, w.lerp[5].f32(), nullptr, n, e, xx);
    lora(w.g1, w.g2, &sigmoid_act, g);
  }
  rwkv7_prepare({.w0 = w.w0.f32(), .a0 = w.a0.f32(), .k_k = w.k_k.f32(), .k_a = w.k_a.f32()}, n, e, hs, dw, a, k,
                kk, b);
  const backend::RecurrentLayer& st = rwkv_state(spec);
  const int64_t sf = e * hs;
  for (int64_t tk = 0; tk < n; ++tk) {
    const int64_t o = tk * e;
    rwkv_wkv7_token(nh, hs, st.ssm + kv_->rs->slot[tk] * sf, r + o, dw + o, k + o, v + o, kk + o, b + o, y + o);
  }
  rwkv_group_norm(y, n, e, hs, spec.gn_eps, w.ln.f32(), w.ln_b.f32());
  rwkv7_bonus(y, r, k, v, w.r_k.f32(), n, e, hs);
  if (w.g1) rwkv_mul(y, g, n * e);
}

void CpuBackend::rwkv_channel_mix(const backend::RwkvSpec& spec, backend::Act h, backend::Act out, bool accumulate) {
  const backend::RecurrentLayer& st = rwkv_state(spec);
  const backend::RwkvWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, e = spec.n_embd, ff = w.cm_key.rows();
  Carve c(ws_.rwkv, n * (3 * e + ff));
  float *sx = c.take(n * e), *xx = c.take(n * e), *r = c.take(n * e), *kf = c.take(n * ff);
  rwkv_shift(h.data, n, e, kv_->rs->slot, st.conv + e, spec.n_shift * e, sx);
  rwkv_mix(h.data, sx, w.cm_lerp_k.f32(), nullptr, n, e, xx);
  product(w.cm_key, backend::Weight{}, xx, n, kf);
  rwkv_act(RwkvAct::ReluSqr, kf, n * ff);
  float* o = target(out, accumulate);
  if (spec.version == 7) {
    product(w.cm_value, backend::Weight{}, kf, n, o);
  } else {
    rwkv_mix(h.data, sx, w.cm_lerp_r.f32(), nullptr, n, e, xx);
    product(w.cm_receptance, backend::Weight{}, xx, n, r);
    product(w.cm_value, backend::Weight{}, kf, n, o);
    rwkv_act(RwkvAct::Sigmoid, r, n * e);
    rwkv_mul(o, r, n * e);
  }
  finish(out, accumulate);
}

}  // namespace ferrite::cpu
