// Self-attention over the KV cache and the encoders' attention within a
// sequence, on the CPU (CpuBackend::attention, encoder_attention), and an
// encoder-decoder's cross-attention (cross_attention).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "cpu/ops/activations.h"
#include "cpu/attention/alibi.h"
#include "cpu/attention/attn_temperature.h"
#include "cpu/attention/attention.h"
#include "cpu/backend/cpu_backend.h"
#include "cpu/ops/norm.h"
#include "cpu/attention/rel_pos_bias.h"
#include "cpu/ops/rope.h"
#include "cpu/vec_ops.h"
#include "quant/kv_quant.h"

namespace ferrite::cpu {

namespace {

// out [n, n_head * hd] = softmax(q_th . k_uh * scale + bias(t, h, u)) v_uh over
// the key rows u < n_k that visible(t, u) admits, in f32 (q [n, n_head * hd],
// k and v [n_k, n_head * hd]); a token that sees no row gets zeros.
template <class Visible, class Bias>
void dense_attention(ThreadPool& pool, AttentionScratch& scratch, const float* q, const float* k, const float* v,
                     int64_t n, int64_t n_k, int64_t n_head, int64_t hd, float scale, Visible visible, Bias bias,
                     float* out) {
  const int64_t row = n_head * hd;
  const VecOps& ops = vec_ops();
  if (scratch.scores.size() < static_cast<size_t>(pool.size())) scratch.scores.resize(static_cast<size_t>(pool.size()));
  pool.run([&](int ith, int nth) {
    std::vector<float>& p = scratch.scores[static_cast<size_t>(ith)];
    if (p.size() < static_cast<size_t>(n_k)) p.resize(static_cast<size_t>(n_k));
    const Range work = split_range(n * n_head, ith, nth);
    for (int64_t wi = work.begin; wi < work.end; ++wi) {
      const int64_t t = wi / n_head, h = wi % n_head;
      const float* qt = q + t * row + h * hd;
      bool any = false;
      for (int64_t u = 0; u < n_k; ++u) {
        float s = -INFINITY;
        if (visible(t, u)) {
          s = ops.dot_f32(qt, k + u * row + h * hd, hd) * scale + bias(t, h, u);
          any = true;
        }
        p[static_cast<size_t>(u)] = s;
      }
      float* at = out + t * row + h * hd;
      std::fill_n(at, hd, 0.0f);
      if (!any) continue;
      softmax_inplace(p.data(), n_k);
      for (int64_t u = 0; u < n_k; ++u) {
        const float pu = p[static_cast<size_t>(u)];
        if (pu == 0.0f) continue;
        const float* vu = v + u * row + h * hd;
        for (int64_t d = 0; d < hd; ++d) at[d] += pu * vu[d];
      }
    }
  });
}

}  // namespace

void CpuBackend::store_kv(int64_t layer, const float* k, const float* v, const backend::KvView* view) {
  const backend::KvView* kv = view != nullptr ? view : kv_;
  const backend::KvLayer& cache = kv->layers[static_cast<size_t>(layer)];
  const int64_t n = batch_->n_tokens, n_kv = dims_.n_embd_kv();
  const VecOps& ops = vec_ops();
  const int64_t k_row = cache.k_q != nullptr ? quant::kv_quant_row_bytes(cache.k_type, n_kv) : 0;
  const int64_t v_row = cache.v_q != nullptr ? quant::kv_quant_row_bytes(cache.v_type, n_kv) : 0;
  // Tokens split between the threads where there are enough (prompts); the
  // transposed values by dimension, so that no two threads write one line.
  pool_.run_split(n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t cell = kv->slots[t];
      if (cache.k_q != nullptr) {
        quant::kv_quantize_row(cache.k_type, k + t * n_kv, cache.k_q + cell * k_row, n_kv);
      } else {
        ops.f32_to_f16(k + t * n_kv, cache.k + cell * n_kv, n_kv);
      }
      if (cache.v_q != nullptr) quant::kv_quantize_row(cache.v_type, v + t * n_kv, cache.v_q + cell * v_row, n_kv);
    }
  }, n * n_kv);
  if (cache.v_q != nullptr) return;
  pool_.run_split(n_kv, [&](int64_t d0, int64_t d1) {
    for (int64_t d = d0; d < d1; ++d) {
      uint16_t* col = cache.vt + d * kv->n_cells;
      for (int64_t t = 0; t < n; ++t) col[kv->slots[t]] = fp32_to_fp16(v[t * n_kv + d]);
    }
  }, n * n_kv);
}

namespace {

// The cells some token of the batch reads: [lo, hi).
void read_span(const backend::KvView& kv, int64_t n, int64_t& lo, int64_t& hi) {
  lo = 0;
  hi = kv.n_kv;
  if (kv.kv_begin == nullptr) return;
  lo = hi;
  hi = 0;
  for (int64_t t = 0; t < n; ++t) {
    lo = std::min<int64_t>(lo, kv.kv_begin[t]);
    hi = std::max<int64_t>(hi, kv.kv_begin[t] + kv.kv_len[t]);
  }
}

KvElem float_elem(TensorType t) { return t == TensorType::F32 ? KvElem::F32 : KvElem::BF16; }

}  // namespace

void CpuBackend::bind_cache(int64_t layer, AttentionArgs& a, const backend::KvView* view) {
  const backend::KvView* kv = view != nullptr ? view : kv_;
  const backend::KvLayer& cache = kv->layers[static_cast<size_t>(layer)];
  const int64_t n = batch_->n_tokens, n_kv = dims_.n_embd_kv();
  const bool k_float = cache.k_q != nullptr && quant::kv_float_row(cache.k_type);
  const bool v_float = cache.v_q != nullptr && quant::kv_float_row(cache.v_type);
  int64_t lo = 0, hi = 0;
  read_span(*kv, n, lo, hi);
  float* tmp = grow(ws_.kv_row32, n_kv);
  if (k_float || v_float) {
    // A cache of rows (attention_rows.h): f32 / bf16 rows as they are; a
    // quantized or f16 other half read back as f16 rows.
    if (k_float) {
      a.k_rows = cache.k_q;
      a.k_elem = float_elem(cache.k_type);
    } else if (cache.k_q != nullptr) {
      const int64_t k_row = quant::kv_quant_row_bytes(cache.k_type, n_kv);
      uint16_t* dst = grow(ws_.kv_k16, kv->n_kv * n_kv);
      for (int64_t j = lo; j < hi; ++j) {
        quant::kv_row_to_f16(cache.k_type, cache.k_q + j * k_row, n_kv, dst + j * n_kv, 1, tmp);
      }
      a.k_rows = dst;
    } else {
      a.k_rows = cache.k;
    }
    if (v_float) {
      a.v_rows = cache.v_q;
      a.v_elem = float_elem(cache.v_type);
    } else {
      uint16_t* dst = grow(ws_.kv_vt16, kv->n_kv * n_kv);
      const int64_t v_row = cache.v_q != nullptr ? quant::kv_quant_row_bytes(cache.v_type, n_kv) : 0;
      for (int64_t j = lo; j < hi; ++j) {
        if (cache.v_q != nullptr) {
          quant::kv_row_to_f16(cache.v_type, cache.v_q + j * v_row, n_kv, dst + j * n_kv, 1, tmp);
        } else {
          for (int64_t d = 0; d < n_kv; ++d) dst[j * n_kv + d] = cache.vt[d * kv->n_cells + j];
        }
      }
      a.v_rows = dst;
    }
    return;
  }
  a.k = cache.k;
  a.vt = cache.vt;
  a.vt_stride = kv->n_cells;
  // A quantized cache is read back as f16 for the attention kernel.
  if (cache.k_q != nullptr) {
    const int64_t k_row = quant::kv_quant_row_bytes(cache.k_type, n_kv);
    uint16_t* dst = grow(ws_.kv_k16, kv->n_kv * n_kv);
    for (int64_t j = lo; j < hi; ++j) {
      quant::kv_row_to_f16(cache.k_type, cache.k_q + j * k_row, n_kv, dst + j * n_kv, 1, tmp);
    }
    a.k = dst;
  }
  if (cache.v_q != nullptr) {
    const int64_t v_row = quant::kv_quant_row_bytes(cache.v_type, n_kv);
    uint16_t* dst = grow(ws_.kv_vt16, n_kv * kv->n_kv);
    for (int64_t j = lo; j < hi; ++j) {
      quant::kv_row_to_f16(cache.v_type, cache.v_q + j * v_row, n_kv, dst + j, kv->n_kv, tmp);
    }
    a.vt = dst;
    a.vt_stride = kv->n_kv;
  }
}

void CpuBackend::attention(const backend::AttentionSpec& spec, backend::Act h_act, backend::Act out,
                           bool accumulate) {
  const backend::AttentionWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens;
  const int64_t n_q = dims_.n_embd_q(), n_kv = dims_.n_embd_kv(), hd = dims_.head_dim;
  const float* h = h_act.data;
  float* q = grow(ws_.q, n * n_q);
  float* k = grow(ws_.k, n * n_kv);
  float* v = grow(ws_.v, n * n_kv);

  // 1. Projections: [n, n_q], [n, n_kv], [n, n_kv].
  if (w.wqkv) {
    float* qkv = grow(ws_.attn, n * (n_q + 2 * n_kv));
    product(w.wqkv, w.bqkv, h, n, qkv);
    for (int64_t t = 0; t < n; ++t) {
      const float* row = qkv + t * (n_q + 2 * n_kv);
      std::copy_n(row, n_q, q + t * n_q);
      std::copy_n(row + n_q, n_kv, k + t * n_kv);
      std::copy_n(row + n_q + n_kv, n_kv, v + t * n_kv);
    }
  } else {
    product(w.wq, w.bq, h, n, q);
    product(w.wk, w.bk, h, n, k);
    product(w.wv, w.bv, h, n, v);
  }

  if (spec.clamp_qkv > 0.0f) {
    clamp_inplace(q, n * n_q, spec.clamp_qkv);
    clamp_inplace(k, n * n_kv, spec.clamp_qkv);
    clamp_inplace(v, n * n_kv, spec.clamp_qkv);
  }

  // 2. Q/K norms (per head, or over the whole projection: the weight's
  // length says which), then rotary embedding (hunyuan-moe: the other way round).
  auto qk_norms = [&] {
    if (w.q_norm) rms_norm(q, w.q_norm.f32(), dims_.norm_rms_eps, n * n_q / w.q_norm.cols(), w.q_norm.cols(), q);
    if (w.k_norm) rms_norm(k, w.k_norm.f32(), dims_.norm_rms_eps, n * n_kv / w.k_norm.cols(), w.k_norm.cols(), k);
  };
  if (!spec.qk_norm_after_rope) qk_norms();
  if (spec.rope != backend::kNoRope) {
    const size_t r = static_cast<size_t>(spec.rope);
    const backend::RopeConfig& rc = ropes_[r];
    const int64_t half = rc.n_rot / 2;  // the tables' row length
    pool_.run_split(n, [&](int64_t t0, int64_t t1) {
      const float* c = ws_.rope_cos[r].data() + t0 * half;
      const float* si = ws_.rope_sin[r].data() + t0 * half;
      rope_apply(rc, c, si, q + t0 * n_q, t1 - t0, dims_.n_head, hd);
      rope_apply(rc, c, si, k + t0 * n_kv, t1 - t0, dims_.n_head_kv, hd);
    }, n * (n_q + n_kv));
  }
  if (spec.qk_norm_after_rope) qk_norms();
  // llama4: q and k of each head normed without a weight after RoPE; the
  // queries of its NoPE layers scaled by the token's temperature.
  if (spec.qk_unit_norm) {
    rms_norm(q, nullptr, dims_.norm_rms_eps, n * dims_.n_head, hd, q);
    rms_norm(k, nullptr, dims_.norm_rms_eps, n * dims_.n_head_kv, hd, k);
  }
  if (spec.temp_scale > 0.0f) attn_temperature_scale(q, batch_->pos, n, n_q, spec.temp_floor, spec.temp_scale);

  // 3. Keys and values into their cache cells (a sliding or chunked layer's
  // window when the cache has one).
  const bool window = spec.windowed() && kv_->swa != nullptr;
  const backend::KvView& kv = window ? *kv_->swa : *kv_;
  store_kv(spec.layer, k, v, &kv);

  // 4. Attention over the cache: [n, n_q].
  float* attn = grow(ws_.attn, n * n_q);
  AttentionArgs a;
  bind_cache(spec.layer, a, &kv);
  a.q = q;
  a.kv_stride = n_kv;
  a.n_kv = kv.n_kv;
  a.mask = spec.sliding && kv.mask_swa != nullptr ? kv.mask_swa : kv.mask;
  if (spec.chunked) {
    if (kv.mask_chunk == nullptr) throw InvalidArgument("chunked attention without the runtime's chunk mask");
    a.mask = kv.mask_chunk;
  }
  a.kv_begin = kv.kv_begin;
  a.kv_len = kv.kv_len;
  a.mask_stride = kv.mask_stride;
  a.n_tokens = n;
  a.n_head = dims_.n_head;
  a.n_head_kv = dims_.n_head_kv;
  a.head_dim = hd;
  a.scale = spec.scale > 0.0f ? spec.scale : 1.0f / std::sqrt(static_cast<float>(hd));
  a.softcap = spec.softcap;
  a.max_alibi_bias = spec.max_alibi_bias;
  a.sinks = w.sinks ? w.sinks.f32() : nullptr;
  if (spec.rel_bias != nullptr) {
    rel_bias_table(spec.rel_bias, spec.n_rel_buckets, dims_.n_head, false, rel_table_);
    a.dist_bias = rel_table_.data();
    a.n_dist = rel_bias_width(false);
  }
  a.out = attn;
  cpu::attention(a, pool_, ws_.attention);

  // 5. Output projection: [n, n_embd].
  product(w.wo, w.bo, attn, n, target(out, accumulate));
  finish(out, accumulate);
}

void CpuBackend::encoder_attention(const backend::AttentionSpec& spec, backend::Act x_act, backend::Act out) {
  // out [n, n_embd] = wo · softmax(q k^T * scale + alibi or T5's bias) v + bo,
  // each token attending to every token of its sequence, in f32.
  const backend::AttentionWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, n_head = dims_.n_head, hd = dims_.head_dim, n_q = n_head * hd;
  const float* x = x_act.data;
  float* q = grow(ws_.q, n * n_q);
  float* k = grow(ws_.k, n * n_q);
  float* v = grow(ws_.v, n * n_q);
  if (w.wqkv) {
    float* qkv = grow(ws_.attn, n * 3 * n_q);
    product(w.wqkv, w.bqkv, x, n, qkv);
    for (int64_t t = 0; t < n; ++t) {
      const float* row = qkv + t * 3 * n_q;
      std::copy_n(row, n_q, q + t * n_q);
      std::copy_n(row + n_q, n_q, k + t * n_q);
      std::copy_n(row + 2 * n_q, n_q, v + t * n_q);
    }
  } else {
    product(w.wq, w.bq, x, n, q);
    product(w.wk, w.bk, x, n, k);
    product(w.wv, w.bv, x, n, v);
  }
  if (spec.rope != backend::kNoRope) {
    const size_t r = static_cast<size_t>(spec.rope);
    rope_apply(ropes_[r], ws_.rope_cos[r].data(), ws_.rope_sin[r].data(), q, n, n_head, hd);
    rope_apply(ropes_[r], ws_.rope_cos[r].data(), ws_.rope_sin[r].data(), k, n, n_head, hd);
  }
  float* a = grow(ws_.attn, n * n_q);
  const float scale = spec.scale > 0.0f ? spec.scale : 1.0f / std::sqrt(static_cast<float>(hd));
  const float max_bias = spec.max_alibi_bias;
  const int32_t* seq = batch_->seq;
  const int32_t* pos = batch_->pos;
  auto visible = [seq](int64_t t, int64_t u) { return seq == nullptr || seq[u] == seq[t]; };
  if (spec.rel_bias != nullptr) {
    rel_bias_table(spec.rel_bias, spec.n_rel_buckets, n_head, true, rel_table_);
    const float* table = rel_table_.data();
    const int64_t width = rel_bias_width(true);
    auto bias = [table, width, pos](int64_t t, int64_t h, int64_t u) {
      const int64_t r = std::clamp<int64_t>(pos[u] - pos[t], -kRelMaxDistance, kRelMaxDistance);
      return table[h * width + kRelMaxDistance + r];
    };
    dense_attention(pool_, ws_.attention, q, k, v, n, n, n_head, hd, scale, visible, bias, a);
  } else {
    auto bias = [max_bias, n_head, pos](int64_t t, int64_t h, int64_t u) {
      if (max_bias <= 0.0f) return 0.0f;
      return alibi_slope(h, n_head, max_bias) * -static_cast<float>(std::abs(pos[t] - pos[u]));
    };
    dense_attention(pool_, ws_.attention, q, k, v, n, n, n_head, hd, scale, visible, bias, a);
  }
  product(w.wo, w.bo, a, n, out.data);
}

void CpuBackend::cross_attention(const backend::AttentionSpec& spec, backend::Act h_act, backend::Act out) {
  const backend::AttentionWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, n_enc = batch_->n_enc;
  const int64_t n_head = dims_.n_head, hd = dims_.head_dim, n_q = n_head * hd;
  if (batch_->enc == nullptr || n_enc <= 0) throw InvalidArgument("cross-attention without the encoder's output");
  float* q = grow(ws_.q, n * n_q);
  float* k = grow(ws_.k, n_enc * n_q);
  float* v = grow(ws_.v, n_enc * n_q);
  product(w.wq, w.bq, h_act.data, n, q);
  product(w.wk, w.bk, batch_->enc, n_enc, k);
  product(w.wv, w.bv, batch_->enc, n_enc, v);
  float* a = grow(ws_.attn, n * n_q);
  const float scale = spec.scale > 0.0f ? spec.scale : 1.0f / std::sqrt(static_cast<float>(hd));
  const int32_t* seq = batch_->seq;
  const int32_t* enc_seq = batch_->enc_seq;
  auto visible = [seq, enc_seq](int64_t t, int64_t u) {
    return seq == nullptr || enc_seq == nullptr || enc_seq[u] == seq[t];
  };
  auto bias = [](int64_t, int64_t, int64_t) { return 0.0f; };
  dense_attention(pool_, ws_.attention, q, k, v, n, n_enc, n_head, hd, scale, visible, bias, a);
  product(w.wo, w.bo, a, n, out.data);
}

}  // namespace ferrite::cpu
