// The CUDA backend's block operations: self-attention over the device cache
// (projections stacked where they can be, RoPE and the K/V store fused into
// the one-token Q|K|V product or into one launch, the decode attention
// writing the output product's Q8_0 input), the feed-forward variants (gate
// and up as one product for one token, SwiGLU writing the down product's
// input), the experts (gpu_moe.h) and the encoders' attention.
#include <cmath>

#include "core/error.h"
#include "cuda/backend/cuda_backend.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/llama4_ops.h"
#include "cuda/kernels/relu_sqr.h"
#include "cpu/attention/rel_pos_bias.h"

namespace ferrite::cuda {
namespace {

constexpr int64_t kQ8_0Block = 32;  // elements per Q8_0 activation block

bool q8_0_input(TensorType t) { return t == TensorType::Q4_0 || t == TensorType::Q5_0 || t == TensorType::Q8_0; }

}  // namespace

const CudaBackend::ViewStep& CudaBackend::view_of(const backend::AttentionSpec& spec) const {
  const int64_t li = spec.layer - first_layer_;
  if (li < 0 || li >= static_cast<int64_t>(k_cache_.size())) {
    throw InvalidArgument("GPU backend: layer " + std::to_string(spec.layer) + " has no cache on the GPU");
  }
  if (!in_window_[static_cast<size_t>(li)]) {
    // With a window cache the sliding (or chunk) mask is the window's (the whole cache's view has none).
    if (spec.windowed() && views_[kWindowView].kv != nullptr) {
      throw Error("GPU backend: layer " + std::to_string(spec.layer) +
                  " attends with the sliding window or chunks but keeps the whole cache's cells");
    }
    return views_[kMainView];
  }
  // A window layer: the window's cells, slots, ranges and (sliding or chunk) mask.
  if (!spec.windowed()) {
    throw Error("GPU backend: layer " + std::to_string(spec.layer) +
                " keeps a window's cells but attends without the sliding window or chunks");
  }
  if (views_[kWindowView].kv == nullptr) {
    throw InvalidArgument("GPU backend: layer " + std::to_string(spec.layer) +
                          " keeps a sliding window's cells, and the step has no window view (KvView::swa)");
  }
  return views_[kWindowView];
}

AttentionParams CudaBackend::attention_params(const backend::AttentionSpec& spec, float* q, float* out) {
  const ViewStep& v = view_of(spec);
  const int64_t li = spec.layer - first_layer_;
  if (v.kv == nullptr) throw InvalidArgument("GPU backend: attention over the cache in a step without its view");
  AttentionParams ap;
  ap.mask = spec.sliding && v.mask_swa != nullptr ? v.mask_swa : v.mask;
  if (spec.chunked) {
    if (v.mask_chunk == nullptr) throw InvalidArgument("GPU backend: chunked attention without the chunk mask");
    ap.mask = v.mask_chunk;
  }
  ap.n_kv = v.n_kv;
  ap.kv_begin = v.begin;
  ap.kv_len = v.len;
  ap.mask_stride = v.mask_stride;
  ap.max_len = v.max_len;
  ap.q_tiles = v.tiles;
  ap.n_q_tiles = v.n_q_tiles;
  ap.decode_tokens = v.listed;
  ap.n_decode_tokens = v.n_decode;
  ap.n_split = v.n_split;
  ap.split_scratch = v.n_split > 1 ? scratch_[kSplit].as<float>() : nullptr;
  ap.n_tokens = batch_->n_tokens;
  ap.n_head = dims_.n_head;
  ap.n_head_kv = dims_.n_head_kv;
  ap.head_dim = dims_.head_dim;
  ap.scale = spec.scale > 0.0f ? spec.scale : 1.0f / std::sqrt(static_cast<float>(dims_.head_dim));
  ap.softcap = spec.softcap;
  ap.max_alibi_bias = spec.max_alibi_bias;
  ap.sinks = spec.w != nullptr ? weights_.vec(spec.w->sinks) : nullptr;
  ap.q = q;
  ap.out = out;
  ap.k = k_cache_[static_cast<size_t>(li)].as();
  ap.v = v_cache_[static_cast<size_t>(li)].as();
  ap.k_type = k_ref_.type;
  ap.v_type = v_ref_.type;
  ap.k_row_bytes = k_ref_.row_bytes;
  ap.v_row_bytes = v_ref_.row_bytes;
  return ap;
}

bool CudaBackend::project_qkv(const backend::AttentionWeights& w, const RopeRef& r, backend::Act h, float* q,
                              float* k, float* v, uint16_t* kc, uint16_t* vc, const int32_t* slots) {
  const int64_t n = h.rows;
  const int64_t n_q = dims_.n_embd_q(), n_ekv = dims_.n_embd_kv();
  Activation& a = act(h);
  LinearRunner& lin = *lin_;
  if (w.wqkv) {
    const GpuMatrix& m = weights_.matrix(w.wqkv);
    const float* b = weights_.vec(w.bqkv);
    if (n == 1) {
      lin.run(m, a, q, false, b);  // one row: q | k | v
      lora_add(w.wqkv, a, q);
    } else {
      float* qkv = scratch(kWide, n * (n_q + 2 * n_ekv));
      lin.run(m, a, qkv, false, b);
      lora_add(w.wqkv, a, qkv);
      gather_columns(qkv, n_q + 2 * n_ekv, 0, n, n_q, q, stream_);
      gather_columns(qkv, n_q + 2 * n_ekv, n_q, n, n_ekv, k, stream_);
      gather_columns(qkv, n_q + 2 * n_ekv, n_q + n_ekv, n, n_ekv, v, stream_);
    }
    return false;
  }
  const float* bq = weights_.vec(w.bq);
  const float* bk = weights_.vec(w.bk);
  const float* bv = weights_.vec(w.bv);
  // Q|K|V as one matrix, or (Q4_K_M's Q6_K V) Q|K and V.
  const bool all3 = WeightStore::stackable({&w.wq, &w.wk, &w.wv}) || !WeightStore::stackable({&w.wq, &w.wk});
  const WeightStore::Stack& st = all3 ? weights_.stacked({&w.wq, &w.wk, &w.wv}) : weights_.stacked({&w.wq, &w.wk});
  const GpuMatrix& mv = all3 ? st.parts[2] : weights_.matrix(w.wv);
  // With LoRA terms each projection is its own product (the terms add to each).
  const bool stack = !lora_on();
  if (stack && n == 1 && all3 && st.all.data != nullptr && bq == nullptr && bk == nullptr && bv == nullptr) {
    // One token: Q, K and V in one launch; with adjacent-pair RoPE and an f16
    // cache it also rotates q, k and stores k, v (gemv_quant_rope).
    const bool typed_cache = k_ref_.type != TensorType::F16 || v_ref_.type != TensorType::F16;
    RopeKvOut rk;
    bool fused = false;
    if (sw_.cuda_fuse && sw_.cuda_fuse_rope && !exact_products() && !typed_cache && r.c != nullptr && !r.c->neox &&
        !w.q_norm && !w.k_norm) {
      rk.cos_t = r.cos_t;
      rk.sin_t = r.sin_t;
      rk.n_q = n_q;
      rk.n_kv = n_ekv;
      rk.head_dim = dims_.head_dim;
      rk.half = r.c->n_rot / 2;
      rk.slot = slots;
      rk.k_cache = kc;
      rk.v_cache = vc;
      fused = lin.takes_rope(st.all, n, rk);
    }
    lin.run(st.all, a, q, false, nullptr, fused ? &rk : nullptr);
    return fused;
  }
  if (stack && n == 1 && !all3 && st.all.data != nullptr && bq == nullptr && bk == nullptr) {
    lin.run(st.all, a, q, false);  // q | k
    lin.run(mv, a, v, false, bv);
    return false;
  }
  lin.run(st.parts[0], a, q, false, bq);
  lin.run(st.parts[1], a, k, false, bk);
  lin.run(mv, a, v, false, bv);
  lora_add(w.wq, a, q);
  lora_add(w.wk, a, k);
  lora_add(w.wv, a, v);
  return false;
}

void CudaBackend::rope_and_store(const RopeRef& r, int64_t n, float* q, float* k, float* v, uint16_t* kc,
                                 uint16_t* vc, const int32_t* slots) {
  const int64_t hd = dims_.head_dim, n_ekv = dims_.n_embd_kv();
  const bool typed_cache = k_ref_.type != TensorType::F16 || v_ref_.type != TensorType::F16;
  if (n == 1 && sw_.cuda_fuse && !exact_products() && !typed_cache) {
    // q | k: one row of heads, rotated and k, v stored by one launch.
    rope_store_kv(q, v, r.cos_t, r.sin_t, dims_.n_head, dims_.n_head_kv, hd, r.c != nullptr ? r.c->n_rot : 0,
                  r.c != nullptr && r.c->neox, slots, kc, vc, stream_);
    return;
  }
  if (r.c != nullptr && n == 1) {
    rope(q, r.cos_t, r.sin_t, 1, dims_.n_head + dims_.n_head_kv, hd, r.c->n_rot, r.c->neox, stream_);  // q | k
  } else if (r.c != nullptr) {
    rope(q, r.cos_t, r.sin_t, n, dims_.n_head, hd, r.c->n_rot, r.c->neox, stream_);
    rope(k, r.cos_t, r.sin_t, n, dims_.n_head_kv, hd, r.c->n_rot, r.c->neox, stream_);
  }
  if (typed_cache) {
    // A block-type K or V: the rows quantized into the cache.
    KvCacheRef kr = k_ref_, vr = v_ref_;
    kr.data = kc;
    vr.data = vc;
    store_kv_typed(k, v, slots, n, n_ekv, kr, vr, stream_);
  } else {
    store_kv(k, v, slots, n, n_ekv, kc, vc, stream_);
  }
}

void CudaBackend::attention(const backend::AttentionSpec& spec, backend::Act h, backend::Act out, bool accumulate) {
  if (!kernels()) return;
  const backend::AttentionWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens;
  const int64_t n_q = dims_.n_embd_q(), n_ekv = dims_.n_embd_kv();
  // [n, n_q], [n, n_ekv], [n, n_ekv] one after another: for one token, the
  // output row of a stacked product.
  float* q = scratch(kQkv, n * (n_q + 2 * n_ekv));
  float* k = q + n * n_q;
  float* v = k + n * n_ekv;
  float* attn = scratch(kAttn, n * n_q);
  AttentionParams ap = attention_params(spec, q, attn);
  const ViewStep& view = view_of(spec);
  const int32_t* slots = view.slots;
  if (spec.rel_bias != nullptr) {
    ap.dist_bias = rel_table(spec.rel_bias, spec.n_rel_buckets, false);
    ap.n_dist = cpu::rel_bias_width(false);
  }
  uint16_t* kc = static_cast<uint16_t*>(const_cast<void*>(ap.k));
  uint16_t* vc = static_cast<uint16_t*>(const_cast<void*>(ap.v));
  RopeRef r;
  if (spec.rope != backend::kNoRope) r = {&ropes_[static_cast<size_t>(spec.rope)], rope_cos(spec.rope), rope_sin(spec.rope)};

  // 1. Projections, per-head norms, RoPE, keys and values into the cache.
  // Clipping (mpt's clamp_kqv) comes between the products and RoPE: no fused RoPE then.
  bool done = false;
  // llama4: the per-head norm after RoPE and the temperature of q come
  // between RoPE and the cache (no fused RoPE + store then); hunyuan-moe's
  // weighted q/k norms after RoPE likewise (applied below, after this block).
  const bool llama4_steps = spec.qk_unit_norm || spec.temp_scale > 0.0f || spec.qk_norm_after_rope;
  if (llama4_steps) {
    project_qkv(w, RopeRef{}, h, q, k, v, kc, vc, slots);
    if (r.c != nullptr) {
      rope(q, r.cos_t, r.sin_t, n, dims_.n_head, dims_.head_dim, r.c->n_rot, r.c->neox, stream_);
      rope(k, r.cos_t, r.sin_t, n, dims_.n_head_kv, dims_.head_dim, r.c->n_rot, r.c->neox, stream_);
    }
    if (spec.qk_unit_norm) {
      rms_norm(q, nullptr, dims_.norm_rms_eps, n * dims_.n_head, dims_.head_dim, q, stream_);
      rms_norm(k, nullptr, dims_.norm_rms_eps, n * dims_.n_head_kv, dims_.head_dim, k, stream_);
    }
    if (spec.temp_scale > 0.0f) attn_temperature_scale(q, in_.pos, n, n_q, spec.temp_floor, spec.temp_scale, stream_);
    r = RopeRef{};  // rotated: the store below only stores
  } else if (spec.clamp_qkv > 0.0f) {
    project_qkv(w, RopeRef{}, h, q, k, v, kc, vc, slots);  // without RoPE, nothing is stored (returns false)
    clamp(q, spec.clamp_qkv, n * (n_q + 2 * n_ekv), stream_);  // q, k, v side by side
  } else {
    done = project_qkv(w, r, h, q, k, v, kc, vc, slots);
  }
  const float eps = dims_.norm_rms_eps;
  // Per head, or over the whole projection (olmo2): the weight's length says which.
  if (w.q_norm) rms_norm(q, weights_.vec(w.q_norm), eps, n * n_q / w.q_norm.cols(), w.q_norm.cols(), q, stream_);
  if (w.k_norm) rms_norm(k, weights_.vec(w.k_norm), eps, n * n_ekv / w.k_norm.cols(), w.k_norm.cols(), k, stream_);
  if (!done) rope_and_store(r, n, q, k, v, kc, vc, slots);

  // 2. Attention over the cache; the decode kernel writes the Q8_0 blocks
  // the output product reads (one quantizer launch less per layer).
  const GpuMatrix& wo = weights_.matrix(w.wo);
  act_attn_.set(attn, n, n_q);
  const bool attn_q8 = sw_.cuda_fuse && sw_.cuda_fuse_attn && !exact_products() && q8_0_input(wo.type) &&
                       n_q % kQ8_0Block == 0 && attention_decode_takes_all(ap);
  ap.out_q8 = attn_q8 ? act_attn_.quant_buffers(ActFormat::Q8_0) : QuantAct{};
  run_attention(ap, view);
  if (attn_q8) act_attn_.mark_quantized(ActFormat::Q8_0);

  // 3. Output projection: out (+)= attn · Wo^T (+ bo).
  project_out(w.wo, wo, weights_.vec(w.bo), act_attn_, out.data, accumulate);
  written(out);
}

void CudaBackend::dense_ffn(const backend::FfnSpec& spec, backend::Act h, float* y, bool accumulate) {
  const backend::FfnWeights& w = *spec.w;
  const int64_t n = h.rows;
  const bool fuse = sw_.cuda_fuse && !exact_products();
  Activation& a = act(h);
  LinearRunner& lin = *lin_;
  const GpuMatrix& down = weights_.matrix(w.down);
  const float* down_b = weights_.vec(w.down_b);
  if (spec.kind == backend::FfnKind::FusedSwiGlu) {
    const GpuMatrix& up = weights_.matrix(w.up);  // gate | up [2 n_ff, n_embd]
    const int64_t n_ff = up.n / 2;
    float* gu = scratch(kFfn, n * up.n);
    float* mid = scratch(kFfnAct, n * n_ff);
    lin.run(up, a, gu);
    lora_add(w.up, a, gu);
    swiglu_fused(gu, n, n_ff, mid, stream_);
    act_ffn_.set(mid, n, n_ff);
  } else {
    const float* gate_b = weights_.vec(w.gate_b);
    const float* up_b = weights_.vec(w.up_b);
    const bool gated = static_cast<bool>(w.gate);
    // One token: gate|up as one product (rows stacked) where they stack.
    const bool stack = gated && WeightStore::stackable({&w.gate, &w.up});
    const WeightStore::Stack* st = stack ? &weights_.stacked({&w.gate, &w.up}) : nullptr;
    const GpuMatrix& up = st != nullptr ? st->parts[1] : weights_.matrix(w.up);
    const int64_t n_ff = up.n;
    float* gate = scratch(kFfn, 2 * n * n_ff);  // [n, n_ff], then up [n, n_ff]
    float* upv = gate + n * n_ff;
    if (gated && n == 1 && st != nullptr && gate_b == nullptr && up_b == nullptr && !lora_on()) {
      lin.run(st->all, a, gate);  // gate | up
    } else {
      if (gated) lin.run(st != nullptr ? st->parts[0] : weights_.matrix(w.gate), a, gate, false, gate_b);
      lin.run(up, a, upv, false, up_b);
      if (gated) lora_add(w.gate, a, gate);
      lora_add(w.up, a, upv);
    }
    act_ffn_.set(upv, n, n_ff);
    if (spec.kind == backend::FfnKind::ReluSqr) {
      relu_sqr(upv, n * n_ff, stream_);
    } else if (spec.kind == backend::FfnKind::Relu) {
      relu(upv, n * n_ff, stream_);
    } else if (spec.kind == backend::FfnKind::GeluF16) {
      geglu_f16(gated ? gate : upv, gated ? upv : nullptr, n * n_ff, upv, stream_);
    } else if (!gated) {
      silu(upv, n, n_ff, stream_);
    } else {
      // SwiGLU also writing the down product's input form outside the exact mode.
      ActOut form;
      if (fuse && fused_out(down.type, act_ffn_, form)) {
        swiglu_act(gate, upv, n, n_ff, upv, form, stream_);
        mark_made(act_ffn_, form);
      } else {
        swiglu(gate, upv, n, n_ff, upv, stream_);
      }
    }
  }
  project_out(w.down, down, down_b, act_ffn_, y, accumulate);
}

void CudaBackend::project_out(const backend::Weight& lw, const GpuMatrix& w, const float* bias, Activation& a,
                              float* y, bool accumulate) {
  if (!accumulate || bias == nullptr) {
    lin_->run(w, a, y, accumulate, bias);
    lora_add(lw, a, y);
    return;
  }
  // The CPU backend's order (cpu_backend.cpp target/finish): the biased
  // product first, then the residual: y + (a·W^T + b), not (y + a·W^T) + b,
  // whose last bits differ and, through the f16 roundings of the cache,
  // move the logits of a float model by up to 3e-3 (starcoder2).
  const int64_t n = a.m();
  float* t = scratch(kWide, n * w.n);
  lin_->run(w, a, t, false, bias);
  lora_add(lw, a, t);
  cuda::add(y, t, n * w.n, stream_);
}

void CudaBackend::feed_forward(const backend::FfnSpec& spec, backend::Act h, backend::Act out, bool accumulate) {
  if (!kernels()) return;
  dense_ffn(spec, h, out.data, accumulate);
  written(out);
}

void CudaBackend::moe(const backend::MoeWeights& w, backend::Act h, backend::Act out, bool accumulate) {
  if (!kernels()) return;
  // The grouped path copies the expert ids to the host (such a step is never captured).
  if (!moe_->device_only(w, h.rows)) host_synced_ = true;
  if (!accumulate) FERRITE_CUDA_CHECK(cudaMemsetAsync(out.data, 0, static_cast<size_t>(out.size()) * sizeof(float), stream_));
  moe_->run(w, act(h), out.data, *lin_);
  written(out);
}

void CudaBackend::encoder_attention(const backend::AttentionSpec& spec, backend::Act h, backend::Act out) {
  if (!kernels()) return;
  const backend::AttentionWeights& w = *spec.w;
  const int64_t n = h.rows, n_head = dims_.n_head, hd = dims_.head_dim, n_q = n_head * hd;
  const float* dist_bias = spec.rel_bias != nullptr ? rel_table(spec.rel_bias, spec.n_rel_buckets, true) : nullptr;
  // q, k, v [n, n_q] each, then (fused wqkv) the product [n, 3 n_q] they are gathered from.
  float* q = scratch(kEncoder, (w.wqkv ? 6 : 3) * n * n_q);
  float* k = q + n * n_q;
  float* v = k + n * n_q;
  float* att = scratch(kAttn, n * n_q);
  Activation& a = act(h);
  if (w.wqkv) {
    float* qkv = v + n * n_q;
    lin_->run(weights_.matrix(w.wqkv), a, qkv, false, weights_.vec(w.bqkv));
    gather_columns(qkv, 3 * n_q, 0, n, n_q, q, stream_);
    gather_columns(qkv, 3 * n_q, n_q, n, n_q, k, stream_);
    gather_columns(qkv, 3 * n_q, 2 * n_q, n, n_q, v, stream_);
  } else {
    lin_->run(weights_.matrix(w.wq), a, q, false, weights_.vec(w.bq));
    lin_->run(weights_.matrix(w.wk), a, k, false, weights_.vec(w.bk));
    lin_->run(weights_.matrix(w.wv), a, v, false, weights_.vec(w.bv));
  }
  if (spec.rope != backend::kNoRope) {
    const backend::RopeConfig& rc = ropes_[static_cast<size_t>(spec.rope)];
    rope(q, rope_cos(spec.rope), rope_sin(spec.rope), n, n_head, hd, rc.n_rot, rc.neox, stream_);
    rope(k, rope_cos(spec.rope), rope_sin(spec.rope), n, n_head, hd, rc.n_rot, rc.neox, stream_);
  }
  const float scale = spec.scale > 0.0f ? spec.scale : 1.0f / std::sqrt(static_cast<float>(hd));
  attention_seq(q, k, v, in_.seq, in_.pos, spec.max_alibi_bias, n, n_head, hd, scale, att, stream_, dist_bias);
  act_attn_.set(att, n, n_q);
  lin_->run(weights_.matrix(w.wo), act_attn_, out.data, false, weights_.vec(w.bo));
  written(out);
}

void CudaBackend::cross_attention(const backend::AttentionSpec& spec, backend::Act h, backend::Act out) {
  if (!kernels()) return;
  const backend::AttentionWeights& w = *spec.w;
  const int64_t n = h.rows, n_enc = batch_->n_enc, n_embd = dims_.n_embd;
  const int64_t n_head = dims_.n_head, hd = dims_.head_dim, n_q = n_head * hd;
  if (batch_->enc == nullptr || n_enc <= 0) throw InvalidArgument("cross-attention without the encoder's output");
  // The encoder's rows and their sequences, uploaded in the step (such steps are never captured).
  host_work();
  float* enc = scratch(kCross, n_enc * n_embd + n_enc);
  auto* enc_seq = reinterpret_cast<int32_t*>(enc + n_enc * n_embd);
  FERRITE_CUDA_CHECK(cudaMemcpyAsync(enc, batch_->enc, static_cast<size_t>(n_enc * n_embd) * sizeof(float),
                                     cudaMemcpyHostToDevice, stream_));
  if (batch_->enc_seq != nullptr) {
    FERRITE_CUDA_CHECK(cudaMemcpyAsync(enc_seq, batch_->enc_seq, static_cast<size_t>(n_enc) * sizeof(int32_t),
                                       cudaMemcpyHostToDevice, stream_));
  }
  act_enc_.set(enc, n_enc, n_embd);
  float* q = scratch(kEncoder, n * n_q + 2 * n_enc * n_q);
  float* k = q + n * n_q;
  float* v = k + n_enc * n_q;
  float* att = scratch(kAttn, n * n_q);
  lin_->run(weights_.matrix(w.wq), act(h), q, false, weights_.vec(w.bq));
  lin_->run(weights_.matrix(w.wk), act_enc_, k, false, weights_.vec(w.bk));
  lin_->run(weights_.matrix(w.wv), act_enc_, v, false, weights_.vec(w.bv));
  const float scale = spec.scale > 0.0f ? spec.scale : 1.0f / std::sqrt(static_cast<float>(hd));
  attention_cross(q, k, v, in_.seq, batch_->enc_seq != nullptr ? enc_seq : nullptr, n, n_enc, n_head, hd, scale, att,
                  stream_);
  act_attn_.set(att, n, n_q);
  lin_->run(weights_.matrix(w.wo), act_attn_, out.data, false, weights_.vec(w.bo));
  written(out);
}

const float* CudaBackend::rel_table(const float* rel_b, int64_t n_buckets, bool bidirectional) {
  std::unique_ptr<DeviceBuffer>& t = rel_tables_[{rel_b, bidirectional}];
  if (t == nullptr) {
    host_work();
    std::vector<float> table;
    cpu::rel_bias_table(rel_b, n_buckets, dims_.n_head, bidirectional, table);
    auto buf = std::make_unique<DeviceBuffer>(table.size() * sizeof(float));
    FERRITE_CUDA_CHECK(cudaMemcpy(buf->as(), table.data(), buf->size(), cudaMemcpyHostToDevice));
    t = std::move(buf);
  }
  return t->as<float>();
}

}  // namespace ferrite::cuda
