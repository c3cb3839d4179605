// Multi-head latent attention on the GPU (CudaBackend::mla_attention), the
// CPU's steps (cpu/backend/cpu_mla.cpp) with the GPU's kernels: products
// through LinearRunner, the latent row and the query heads assembled by
// strided copies, the absorbed per-head matrices by heads_product (twin of
// cpu/attention/heads_product.h), RoPE, the cache store and the attention kernels of
// the other families over one KV head of kv_lora + rope values.
#include <cmath>

#include "core/error.h"
#include "cuda/backend/cuda_backend.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/heads_product.h"

namespace ferrite::cuda {
namespace {

// dst rows (dst_ld floats apart) [.., cols] = src rows (src_ld apart), `rows` rows.
void copy_block(float* dst, int64_t dst_ld, const float* src, int64_t src_ld, int64_t rows, int64_t cols,
                cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  FERRITE_CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<size_t>(dst_ld) * sizeof(float), src,
                                       static_cast<size_t>(src_ld) * sizeof(float),
                                       static_cast<size_t>(cols) * sizeof(float), static_cast<size_t>(rows),
                                       cudaMemcpyDeviceToDevice, s));
}

cpu::HeadsProduct heads(const GpuMatrix& w, const float* in, int64_t in_row, int64_t in_head, int64_t n,
                        int64_t n_head, int64_t n_in, int64_t n_out, float* out, int64_t out_row, int64_t out_head) {
  return {.in = in, .in_row = in_row, .in_head = in_head, .w = w.data, .w_type = w.type, .n = n, .n_head = n_head,
          .n_in = n_in, .n_out = n_out, .out = out, .out_row = out_row, .out_head = out_head};
}

}  // namespace

void CudaBackend::mla_attention(const backend::MlaSpec& spec, backend::Act h, backend::Act out, bool accumulate) {
  if (!kernels()) return;
  const backend::MlaWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, H = spec.n_head, nope = spec.nope, rope = spec.n_rot, lat = spec.kv_lora;
  const int64_t qk = nope + rope, row = rope + lat, vd = spec.v_dim;
  if (dims_.n_embd_kv() != row || dims_.n_head_kv != 1 || dims_.head_dim != row || dims_.n_head != H) {
    throw InvalidArgument("GPU latent attention: the cache rows hold " + std::to_string(dims_.n_embd_kv()) +
                          " values, not kv_lora_rank + rope = " + std::to_string(row));
  }
  const float eps = dims_.norm_rms_eps;
  LinearRunner& lin = *lin_;
  Activation& a = act(h);

  // Scratch: q [n, H qk] | kv [n, lat + rope] | k rows [n, row] | c [n, lat].
  float* q = scratch(kQkv, n * (H * qk + (lat + rope) + row + lat));
  float* kv = q + n * H * qk;
  float* k = kv + n * (lat + rope);
  float* c = k + n * row;
  float* qa = scratch(kEncoder, n * H * row);  // absorbed queries [n, H, row]
  float* o = scratch(kAttn, n * H * row);      // attention over the rows [n, H, row]
  float* ov = scratch(kFfnAct, n * H * vd);    // per-head values [n, H vd]

  // 1. Queries.
  if (w.wq_a) {
    const GpuMatrix& qa_m = weights_.matrix(w.wq_a);
    float* ql = scratch(kFfn, n * qa_m.n);
    lin.run(qa_m, a, ql);
    rms_norm(ql, weights_.vec(w.q_a_norm), eps, n, qa_m.n, ql, stream_);
    act_tmp_.set(ql, n, qa_m.n);
    lin.run(weights_.matrix(w.wq_b), act_tmp_, q);
  } else {
    lin.run(weights_.matrix(w.wq), a, q);
  }

  // 2. The latent rows: k_pe, then the normed c.
  lin.run(weights_.matrix(w.wkv_a), a, kv);
  copy_block(k, row, kv + lat, lat + rope, n, rope, stream_);
  copy_block(c, lat, kv, lat + rope, n, lat, stream_);
  rms_norm(c, weights_.vec(w.kv_a_norm), eps, n, lat, c, stream_);
  copy_block(k + rope, row, c, lat, n, lat, stream_);

  // 3. Absorbed queries: q_pe, then W_UK_h^T q_nope_h.
  copy_block(qa, row, q + nope, qk, n * H, rope, stream_);
  heads_product(heads(weights_.matrix(w.wk_b), q, H * qk, qk, n, H, nope, lat, qa + rope, H * row, row), stream_);

  // 4. RoPE of the rotary parts, the rows into the cache (as K and V).
  backend::AttentionSpec as;
  as.layer = spec.layer;
  as.scale = spec.scale > 0.0f ? spec.scale : 1.0f / std::sqrt(static_cast<float>(qk));
  AttentionParams ap = attention_params(as, qa, o);
  const ViewStep& view = view_of(as);
  if (spec.rope != backend::kNoRope) {
    const float* cos_t = rope_cos(spec.rope);
    const float* sin_t = rope_sin(spec.rope);
    // The pairs of the model's RoPE (deepseek2: adjacent; minicpm3: NeoX), as cpu_mla.cpp's rope_apply.
    const backend::RopeConfig& rc = ropes_[static_cast<size_t>(spec.rope)];
    cuda::rope(qa, cos_t, sin_t, n, H, row, rc.n_rot, rc.neox, stream_);
    cuda::rope(k, cos_t, sin_t, n, 1, row, rc.n_rot, rc.neox, stream_);
  }
  if (k_ref_.type != TensorType::F16 || v_ref_.type != TensorType::F16) {
    KvCacheRef kr = k_ref_, vr = v_ref_;
    kr.data = const_cast<void*>(ap.k);
    vr.data = const_cast<void*>(ap.v);
    store_kv_typed(k, k, view.slots, n, row, kr, vr, stream_);
  } else {
    store_kv(k, k, view.slots, n, row, static_cast<uint16_t*>(const_cast<void*>(ap.k)),
             static_cast<uint16_t*>(const_cast<void*>(ap.v)), stream_);
  }

  // 5. Attention, then W_UV_h per head and the output projection.
  run_attention(ap, view);
  heads_product(heads(weights_.matrix(w.wv_b), o + rope, H * row, row, n, H, lat, vd, ov, H * vd, vd), stream_);
  act_attn_.set(ov, n, H * vd);
  project_out(w.wo, weights_.matrix(w.wo), nullptr, act_attn_, out.data, accumulate);
  written(out);
}

}  // namespace ferrite::cuda
