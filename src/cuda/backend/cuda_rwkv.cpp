// RWKV's time and channel mixes on the GPU (CudaBackend::rwkv_time_mix,
// rwkv_channel_mix): the CPU's steps (cpu/backend/cpu_rwkv.cpp) with the
// twins of cpu/recurrent/rwkv.h (kernels/rwkv.h). As for the Mamba-2 mixer
// (cuda_ssm.cpp), the recurrent state stays in the runtime's host memory:
// the rows of the batch's sequences are copied to the device before the
// layer's kernels and back after them, so these steps synchronise with the
// host and are never captured into a graph.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/backend/cuda_backend.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/ops.h"
#include "cuda/kernels/rwkv.h"

namespace ferrite::cuda {
namespace {

// Consecutive pieces of one device buffer.
class Carve {
 public:
  Carve(DeviceBuffer& b, int64_t floats) {
    b.reserve(static_cast<size_t>(floats) * sizeof(float));
    p_ = b.as<float>();
  }
  float* take(int64_t count) {
    float* r = p_;
    p_ += count;
    return r;
  }

 private:
  float* p_;
};

}  // namespace

CudaBackend::RwkvRows CudaBackend::rwkv_rows(const backend::RwkvSpec& spec, bool wkv, bool to_device) {
  const backend::RecurrentView* rs = kv_ != nullptr ? kv_->rs : nullptr;
  const auto layer = static_cast<size_t>(spec.layer);
  if (rs == nullptr || rs->slot == nullptr || layer >= rs->layers.size() || rs->layers[layer].conv == nullptr) {
    throw InvalidArgument("GPU: RWKV layer " + std::to_string(spec.layer) + " has no recurrent state in this step");
  }
  const int64_t n = batch_->n_tokens, shift_f = spec.n_shift * spec.n_embd, wkv_f = spec.n_embd * spec.head_size;
  std::vector<int32_t> uniq, index(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    auto it = std::find(uniq.begin(), uniq.end(), rs->slot[t]);
    if (it == uniq.end()) it = uniq.insert(uniq.end(), rs->slot[t]);
    index[static_cast<size_t>(t)] = static_cast<int32_t>(it - uniq.begin());
  }
  const auto n_u = static_cast<int64_t>(uniq.size());
  RwkvRows r;
  ssm_states_.reserve(static_cast<size_t>(n_u * (shift_f + wkv_f)) * sizeof(float));
  r.shift = ssm_states_.as<float>();
  r.wkv = r.shift + n_u * shift_f;
  const backend::RecurrentLayer& st = rs->layers[layer];
  const auto kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  auto copy = [&](float* dev, float* host, int64_t floats) {
    FERRITE_CUDA_CHECK(cudaMemcpyAsync(to_device ? dev : host, to_device ? host : dev,
                                       static_cast<size_t>(floats) * sizeof(float), kind, stream_));
  };
  for (int64_t u = 0; u < n_u; ++u) {
    const int64_t slot = uniq[static_cast<size_t>(u)];
    copy(r.shift + u * shift_f, st.conv + slot * shift_f, shift_f);
    if (wkv) copy(r.wkv + u * wkv_f, st.ssm + slot * wkv_f, wkv_f);
  }
  if (to_device) {
    ssm_slots_.reserve(static_cast<size_t>(n) * sizeof(int32_t));
    FERRITE_CUDA_CHECK(cudaMemcpyAsync(ssm_slots_.as<int32_t>(), index.data(),
                                       static_cast<size_t>(n) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
  }
  // The host rows (and index) are read before they change.
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  r.idx = ssm_slots_.as<int32_t>();
  return r;
}

float* CudaBackend::rwkv_product(const backend::Weight& w, float* in, int64_t n, float* out, bool accumulate) {
  act_tmp_.set(in, n, w.cols());
  lin_->run(weights_.matrix(w), act_tmp_, out, accumulate);
  return out;
}

void CudaBackend::rwkv_time_mix(const backend::RwkvSpec& spec, backend::Act h, backend::Act out,
                                backend::Act v_first, bool accumulate) {
  if (spec.head_size > 1024) throw InvalidArgument("GPU: RWKV head size above 1024");
  if (!kernels()) return;
  host_work();
  const int64_t n = batch_->n_tokens, e = spec.n_embd;
  const RwkvRows rows = rwkv_rows(spec, /*wkv=*/true, /*to_device=*/true);
  float* sx = scratch(kWide, n * 2 * e);
  float* y = sx + n * e;
  rwkv_shift(h.data, n, e, rows.idx, rows.shift, spec.n_shift * e, sx, stream_);
  if (spec.version == 7) {
    rwkv7_mix_gpu(spec, h.data, sx, v_first.data, rows, y);
  } else {
    rwkv6_mix_gpu(spec, h.data, sx, rows, y);
  }
  rwkv_rows(spec, /*wkv=*/true, /*to_device=*/false);
  rwkv_product(spec.w->output, y, n, out.data, accumulate);
  written(out);
}

void CudaBackend::rwkv6_mix_gpu(const backend::RwkvSpec& spec, const float* h, const float* sx, const RwkvRows& st,
                                float* y) {
  const backend::RwkvWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, e = spec.n_embd, hs = spec.head_size;
  const int64_t extra = w.w2[0].cols(), lora = w.w1.rows(), dextra = w.decay_w1.rows();
  Carve c(rwkv_buf_, n * (7 * e + lora + extra + dextra));
  float *xx = c.take(n * e), *t = c.take(n * lora), *g1 = c.take(n * extra), *m = c.take(n * e);
  float *r = c.take(n * e), *k = c.take(n * e), *v = c.take(n * e), *g = c.take(n * e), *dw = c.take(n * e);
  float* dt = c.take(n * dextra);
  rwkv_mix(h, sx, weights_.vec(w.lerp_x), nullptr, n, e, xx, stream_);
  rwkv_product(w.w1, xx, n, t);
  rwkv_act(RwkvAct::Tanh, t, n * lora, stream_);
  float* dest[5] = {dw, k, v, r, g};
  const backend::Weight* proj[5] = {nullptr, &w.key, &w.value, &w.receptance, &w.gate};
  const backend::Weight* bias[5] = {nullptr, &w.key_b, &w.value_b, &w.receptance_b, nullptr};
  const bool qrwkv = spec.qrwkv();
  const int64_t nh = spec.n_head(), n_kv = spec.n_kv_head();
  for (int j = 0; j < 5; ++j) {
    FERRITE_CUDA_CHECK(cudaMemcpy2DAsync(g1, static_cast<size_t>(extra) * sizeof(float), t + j * extra,
                                         static_cast<size_t>(lora) * sizeof(float),
                                         static_cast<size_t>(extra) * sizeof(float), static_cast<size_t>(n),
                                         cudaMemcpyDeviceToDevice, stream_));
    rwkv_product(w.w2[j], g1, n, m);
    rwkv_mix(h, sx, weights_.vec(w.lerp[j]), m, n, e, xx, stream_);
    if (proj[j] == nullptr) {
      rwkv_product(w.decay_w1, xx, n, dt);
      rwkv_act(RwkvAct::Tanh, dt, n * dextra, stream_);
      rwkv_product(w.decay_w2, dt, n, dw);
      rwkv6_decay(dw, weights_.vec(w.decay), n, e, stream_);
      continue;
    }
    const bool grouped = (j == 1 || j == 2) && n_kv != nh;  // rwkv6qwen2's grouped k, v
    float* into = grouped ? m : dest[j];
    act_tmp_.set(xx, n, e);
    lin_->run(weights_.matrix(*proj[j]), act_tmp_, into, false, bias[j] != nullptr ? weights_.vec(*bias[j]) : nullptr);
    if (grouped) rwkv_repeat_heads(m, n, n_kv, nh / n_kv, hs, dest[j], stream_);
  }
  rwkv_act(qrwkv ? RwkvAct::Sigmoid : RwkvAct::Silu, g, n * e, stream_);
  if (qrwkv) rwkv_key_decay(k, dw, n * e, stream_);
  const auto scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hs)));
  rwkv_wkv6(st.wkv, st.idx, r, k, v, dw, qrwkv ? nullptr : weights_.vec(w.first),
            {.n = n, .n_head = nh, .hs = hs, .scale = scale}, y, stream_);
  if (!qrwkv) rwkv_group_norm(y, n, e, hs, spec.gn_eps, weights_.vec(w.ln), weights_.vec(w.ln_b), stream_);
  rwkv_mul(y, g, n * e, stream_);
}

void CudaBackend::rwkv7_mix_gpu(const backend::RwkvSpec& spec, const float* h, const float* sx, float* v_first,
                                const RwkvRows& st, float* y) {
  const backend::RwkvWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, e = spec.n_embd, hs = spec.head_size;
  const int64_t rank = std::max({w.d1.rows(), w.a1.rows(), w.v1 ? w.v1.rows() : 0, w.g1 ? w.g1.rows() : 0});
  Carve c(rwkv_buf_, n * (9 * e + rank));
  float *xx = c.take(n * e), *t = c.take(n * rank), *r = c.take(n * e), *dw = c.take(n * e), *k = c.take(n * e);
  float *v = c.take(n * e), *a = c.take(n * e), *g = c.take(n * e), *kk = c.take(n * e), *b = c.take(n * e);
  auto mix = [&](int j) { rwkv_mix(h, sx, weights_.vec(w.lerp[j]), nullptr, n, e, xx, stream_); };
  auto lora = [&](const backend::Weight& l1, const backend::Weight& l2, const RwkvAct* act, float* dst) {
    rwkv_product(l1, xx, n, t);
    if (act != nullptr) rwkv_act(*act, t, n * l1.rows(), stream_);
    rwkv_product(l2, t, n, dst);
  };
  const RwkvAct tanh_act = RwkvAct::Tanh, sigmoid_act = RwkvAct::Sigmoid;
  mix(0);
  rwkv_product(w.receptance, xx, n, r);
  mix(1);
  lora(w.d1, w.d2, &tanh_act, dw);
  mix(2);
  rwkv_product(w.key, xx, n, k);
  mix(3);
  rwkv_product(w.value, xx, n, v);
  if (spec.layer == 0) {
    FERRITE_CUDA_CHECK(cudaMemcpyAsync(v_first, v, static_cast<size_t>(n * e) * sizeof(float),
                                       cudaMemcpyDeviceToDevice, stream_));
  } else {
    lora(w.v1, w.v2, nullptr, b);
    rwkv7_value_residual(v, v_first, b, weights_.vec(w.v0), n, e, stream_);
  }
  mix(4);
  lora(w.a1, w.a2, nullptr, a);
  if (w.g1) {
    mix(5);
    lora(w.g1, w.g2, &sigmoid_act, g);
  }
  rwkv7_prepare({.w0 = weights_.vec(w.w0), .a0 = weights_.vec(w.a0), .k_k = weights_.vec(w.k_k),
                 .k_a = weights_.vec(w.k_a)},
                n, e, hs, dw, a, k, kk, b, stream_);
  rwkv_wkv7(st.wkv, st.idx, r, dw, k, v, kk, b, {.n = n, .n_head = spec.n_head(), .hs = hs}, y, stream_);
  rwkv_group_norm(y, n, e, hs, spec.gn_eps, weights_.vec(w.ln), weights_.vec(w.ln_b), stream_);
  rwkv7_bonus(y, r, k, v, weights_.vec(w.r_k), n, e, hs, stream_);
  if (w.g1) rwkv_mul(y, g, n * e, stream_);
}

void CudaBackend::rwkv_channel_mix(const backend::RwkvSpec& spec, backend::Act h, backend::Act out,
                                   bool accumulate) {
  if (!kernels()) return;
  host_work();
  const backend::RwkvWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, e = spec.n_embd, ff = w.cm_key.rows();
  const RwkvRows rows = rwkv_rows(spec, /*wkv=*/false, /*to_device=*/true);
  Carve c(rwkv_buf_, n * (3 * e + ff));
  float *sx = c.take(n * e), *xx = c.take(n * e), *r = c.take(n * e), *kf = c.take(n * ff);
  rwkv_shift(h.data, n, e, rows.idx, rows.shift + e, spec.n_shift * e, sx, stream_);
  rwkv_rows(spec, /*wkv=*/false, /*to_device=*/false);
  rwkv_mix(h.data, sx, weights_.vec(w.cm_lerp_k), nullptr, n, e, xx, stream_);
  rwkv_product(w.cm_key, xx, n, kf);
  rwkv_act(RwkvAct::ReluSqr, kf, n * ff, stream_);
  if (spec.version == 7) {
    rwkv_product(w.cm_value, kf, n, out.data, accumulate);
  } else {
    // out (+)= sigmoid(W_r xr) * (W_v k): the product into scratch, then gated and added.
    float* o = scratch(kFfnAct, n * e);
    rwkv_mix(h.data, sx, weights_.vec(w.cm_lerp_r), nullptr, n, e, xx, stream_);
    rwkv_product(w.cm_receptance, xx, n, r);
    rwkv_product(w.cm_value, kf, n, o);
    rwkv_act(RwkvAct::Sigmoid, r, n * e, stream_);
    rwkv_mul(o, r, n * e, stream_);
    if (accumulate) {
      cuda::add(out.data, o, n * e, stream_);
    } else {
      FERRITE_CUDA_CHECK(cudaMemcpyAsync(out.data, o, static_cast<size_t>(n * e) * sizeof(float),
                                         cudaMemcpyDeviceToDevice, stream_));
    }
  }
  written(out);
}

}  // namespace ferrite::cuda
