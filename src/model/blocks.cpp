#include "model/blocks.h"
#include "model/layer_rope.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "cpu/activations.h"
#include "cpu/attention.h"
#include "cpu/matmul.h"
#include "cpu/norm.h"
#include "cpu/vec_ops.h"
#include "model/kv_quant.h"
#include "model/matmul_observer.h"
#include "quant/quantize_ref.h"
#include "quant/type_traits.h"

namespace ferrite::model {

void embed_tokens(Step& s, const Tensor& tok_embd, float* x) {
  const int64_t n_embd = tok_embd.ne(0);
  const int64_t n_vocab = tok_embd.ne(1);
  const cpu::MatView table = tok_embd.mat();
  const cpu::VecOps& ops = cpu::vec_ops();
  for (int64_t t = 0; t < s.batch.n_tokens; ++t) {
    const int32_t id = s.batch.tokens[t];
    if (id < 0 || id >= n_vocab) {
      throw InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                            std::to_string(n_vocab - 1) + ")");
    }
    const uint8_t* row = table.row(id);
    float* dst = x + t * n_embd;
    switch (table.type) {
      case TensorType::F32:
        std::copy_n(reinterpret_cast<const float*>(row), n_embd, dst);
        break;
      case TensorType::F16:
        ops.f16_to_f32(reinterpret_cast<const uint16_t*>(row), dst, n_embd);
        break;
      case TensorType::BF16:
        for (int64_t i = 0; i < n_embd; ++i) dst[i] = bf16_to_fp32(reinterpret_cast<const uint16_t*>(row)[i]);
        break;
      default:
        quant::type_traits(table.type).to_float(row, dst, n_embd);
        break;
    }
  }
}

void linear(Step& s, const Tensor& w, const Tensor& bias, const float* x, int64_t n, float* y) {
  const cpu::MatView m = w.mat();
  if (s.ws.observer != nullptr) s.ws.observer->on_matmul(*w.info, -1, x, n, m.k);
  cpu::matmul(m, x, n, y, s.pool, s.ws.matmul);
  if (bias) {
    const float* b = bias.f32();
    for (int64_t t = 0; t < n; ++t) add_inplace(y + t * m.n, b, m.n);
  }
}

void add_inplace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

float* gather_output_rows(Step& s, const float* x) {
  const int64_t n_embd = s.hp.n_embd;
  float* out = grow(s.ws.out_rows, s.batch.n_out * n_embd);
  for (int64_t i = 0; i < s.batch.n_out; ++i) {
    std::copy_n(x + s.batch.out_rows[i] * n_embd, n_embd, out + i * n_embd);
  }
  return out;
}

void prepare_rope(Step& s, const float* freq_factors) {
  const cpu::RopeConfig& c = s.rope = rope_config(s.hp, freq_factors);
  const int64_t half = c.n_rot / 2;
  float* cos_t = grow(s.ws.rope_cos, s.batch.n_tokens * half);
  float* sin_t = grow(s.ws.rope_sin, s.batch.n_tokens * half);
  cpu::rope_table(c, s.batch.pos, s.batch.n_tokens, cos_t, sin_t);
}

void self_attention(Step& s, int64_t layer, const AttentionWeights& w, const float* h, float* out, bool sliding) {
  const HParams& hp = s.hp;
  const int64_t n = s.batch.n_tokens;
  const int64_t n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv(), hd = hp.head_dim;
  float* q = grow(s.ws.q, n * n_q);
  float* k = grow(s.ws.k, n * n_kv);
  float* v = grow(s.ws.v, n * n_kv);

  // 1. Projections: [n, n_q], [n, n_kv], [n, n_kv].
  if (w.wqkv) {
    float* qkv = grow(s.ws.attn, n * (n_q + 2 * n_kv));
    linear(s, w.wqkv, w.bqkv, h, n, qkv);
    for (int64_t t = 0; t < n; ++t) {
      const float* row = qkv + t * (n_q + 2 * n_kv);
      std::copy_n(row, n_q, q + t * n_q);
      std::copy_n(row + n_q, n_kv, k + t * n_kv);
      std::copy_n(row + n_q + n_kv, n_kv, v + t * n_kv);
    }
  } else {
    linear(s, w.wq, w.bq, h, n, q);
    linear(s, w.wk, w.bk, h, n, k);
    linear(s, w.wv, w.bv, h, n, v);
  }

  // 2. Per-head norms, then rotary embedding.
  if (w.q_norm) cpu::rms_norm(q, w.q_norm.f32(), hp.norm_rms_eps, n * hp.n_head, hd, q);
  if (w.k_norm) cpu::rms_norm(k, w.k_norm.f32(), hp.norm_rms_eps, n * hp.n_head_kv, hd, k);
  cpu::rope_apply(s.rope, s.ws.rope_cos.data(), s.ws.rope_sin.data(), q, n, hp.n_head, hd);
  cpu::rope_apply(s.rope, s.ws.rope_cos.data(), s.ws.rope_sin.data(), k, n, hp.n_head_kv, hd);

  // 3. Keys and values into their cache cells (f16, or rows of a quantized type).
  const KvLayer& cache = s.kv.layers[static_cast<size_t>(layer)];
  const cpu::VecOps& ops = cpu::vec_ops();
  const int64_t k_row = cache.k_q != nullptr ? kv_quant_row_bytes(cache.k_type, n_kv) : 0;
  const int64_t v_row = cache.v_q != nullptr ? kv_quant_row_bytes(cache.v_type, n_kv) : 0;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t cell = s.kv.slots[t];
    if (cache.k_q != nullptr) {
      kv_quantize_row(cache.k_type, k + t * n_kv, cache.k_q + cell * k_row, n_kv);
    } else {
      ops.f32_to_f16(k + t * n_kv, cache.k + cell * n_kv, n_kv);
    }
    const float* vr = v + t * n_kv;
    if (cache.v_q != nullptr) {
      kv_quantize_row(cache.v_type, vr, cache.v_q + cell * v_row, n_kv);
    } else {
      for (int64_t d = 0; d < n_kv; ++d) cache.vt[d * s.kv.n_cells + cell] = fp32_to_fp16(vr[d]);
    }
  }
  // A quantized cache is read back as f16 for the attention kernel (the
  // cells some token reads: [lo, hi)).
  const uint16_t* k16 = cache.k;
  const uint16_t* vt16 = cache.vt;
  int64_t vt_stride = s.kv.n_cells;
  if (cache.k_q != nullptr || cache.v_q != nullptr) {
    int64_t lo = 0, hi = s.kv.n_kv;
    if (s.kv.kv_begin != nullptr) {
      lo = hi;
      hi = 0;
      for (int64_t t = 0; t < n; ++t) {
        lo = std::min<int64_t>(lo, s.kv.kv_begin[t]);
        hi = std::max<int64_t>(hi, s.kv.kv_begin[t] + s.kv.kv_len[t]);
      }
    }
    float* tmp = grow(s.ws.kv_row32, n_kv);
    if (cache.k_q != nullptr) {
      uint16_t* dst = grow(s.ws.kv_k16, s.kv.n_kv * n_kv);
      for (int64_t j = lo; j < hi; ++j) {
        kv_row_to_f16(cache.k_type, cache.k_q + j * k_row, n_kv, dst + j * n_kv, 1, tmp);
      }
      k16 = dst;
    }
    if (cache.v_q != nullptr) {
      uint16_t* dst = grow(s.ws.kv_vt16, n_kv * s.kv.n_kv);
      for (int64_t j = lo; j < hi; ++j) {
        kv_row_to_f16(cache.v_type, cache.v_q + j * v_row, n_kv, dst + j, s.kv.n_kv, tmp);
      }
      vt16 = dst;
      vt_stride = s.kv.n_kv;
    }
  }

  // 4. Attention over the cache: [n, n_q].
  float* attn = grow(s.ws.attn, n * n_q);
  cpu::AttentionArgs a;
  a.q = q;
  a.k = k16;
  a.vt = vt16;
  a.vt_stride = vt_stride;
  a.kv_stride = n_kv;
  a.n_kv = s.kv.n_kv;
  a.mask = sliding && s.kv.mask_swa != nullptr ? s.kv.mask_swa : s.kv.mask;
  a.kv_begin = s.kv.kv_begin;
  a.kv_len = s.kv.kv_len;
  a.mask_stride = s.kv.mask_stride;
  a.n_tokens = n;
  a.n_head = hp.n_head;
  a.n_head_kv = hp.n_head_kv;
  a.head_dim = hd;
  a.scale = s.attn_scale > 0.0f ? s.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd));
  a.softcap = hp.attn_softcap;
  a.out = attn;
  cpu::attention(a, s.pool, s.ws.attention);

  // 5. Output projection: [n, n_embd].
  linear(s, w.wo, w.bo, attn, n, out);
}

void feed_forward(Step& s, const FfnWeights& w, Activation act, const float* h, int64_t n, float* out) {
  const int64_t n_ff = w.up.mat().n;
  float* up = grow(s.ws.ffn_b, n * n_ff);
  linear(s, w.up, w.up_b, h, n, up);
  if (w.gate) {
    float* gate = grow(s.ws.ffn_a, n * n_ff);
    linear(s, w.gate, w.gate_b, h, n, gate);
    if (act == Activation::Silu) {
      cpu::swiglu(gate, up, n, n_ff, up);
    } else {
      cpu::geglu(gate, up, n * n_ff, up);
    }
  } else if (act == Activation::Silu) {
    cpu::silu_inplace(up, n, n_ff);
  } else {
    cpu::gelu_inplace(up, n * n_ff);
  }
  linear(s, w.down, w.down_b, up, n, out);
}

void mixture_of_experts(Step& s, const MoeWeights& w, const float* h, float* out) {
  const HParams& hp = s.hp;
  const int64_t n = s.batch.n_tokens, n_embd = hp.n_embd;
  const int64_t n_expert = hp.n_expert, k_used = hp.n_expert_used;

  // 1. Router: probabilities [n, n_expert]; top-k per token.
  float* probs = grow(s.ws.router, n * n_expert);
  linear(s, w.gate_inp, Tensor{}, h, n, probs);
  std::vector<int32_t> chosen(static_cast<size_t>(n * k_used));
  std::vector<float> weight(static_cast<size_t>(n * k_used));
  std::vector<int32_t> order(static_cast<size_t>(n_expert));
  for (int64_t t = 0; t < n; ++t) {
    float* p = probs + t * n_expert;
    cpu::softmax_inplace(p, n_expert);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [p](int32_t a, int32_t b) { return p[a] > p[b]; });
    float sum = 0.0f;
    for (int64_t j = 0; j < k_used; ++j) {
      chosen[t * k_used + j] = order[j];
      weight[t * k_used + j] = p[order[j]];
      sum += p[order[j]];
    }
    if (w.norm_weights) {
      for (int64_t j = 0; j < k_used; ++j) weight[t * k_used + j] /= sum;
    }
  }

  // 2. Each expert on the rows routed to it.
  std::fill_n(out, n * n_embd, 0.0f);
  std::vector<int32_t> rows;
  std::vector<float> row_w;
  for (int64_t e = 0; e < n_expert; ++e) {
    rows.clear();
    row_w.clear();
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t j = 0; j < k_used; ++j) {
        if (chosen[t * k_used + j] == e) {
          rows.push_back(static_cast<int32_t>(t));
          row_w.push_back(weight[t * k_used + j]);
        }
      }
    }
    if (rows.empty()) continue;
    const int64_t cnt = static_cast<int64_t>(rows.size());
    const cpu::MatView gate = w.gate_exps.expert(e), up = w.up_exps.expert(e), down = w.down_exps.expert(e);
    const int64_t n_ff = up.n;
    float* in = grow(s.ws.moe_in, cnt * n_embd);
    for (int64_t i = 0; i < cnt; ++i) std::copy_n(h + rows[i] * n_embd, n_embd, in + i * n_embd);
    float* a = grow(s.ws.moe_a, cnt * n_ff);
    float* b = grow(s.ws.moe_b, cnt * n_ff);
    if (s.ws.observer != nullptr) {
      s.ws.observer->on_matmul(*w.gate_exps.info, e, in, cnt, n_embd);
      s.ws.observer->on_matmul(*w.up_exps.info, e, in, cnt, n_embd);
    }
    // Expert products in llama.cpp's vector-dot summation order (its mul_mat_id).
    cpu::matmul(gate, in, cnt, a, s.pool, s.ws.matmul, cpu::DotOrder::Unrolled);
    cpu::matmul(up, in, cnt, b, s.pool, s.ws.matmul, cpu::DotOrder::Unrolled);
    cpu::swiglu(a, b, cnt, n_ff, b);
    if (s.ws.observer != nullptr) s.ws.observer->on_matmul(*w.down_exps.info, e, b, cnt, n_ff);
    float* y = grow(s.ws.moe_out, cnt * n_embd);
    cpu::matmul(down, b, cnt, y, s.pool, s.ws.matmul, cpu::DotOrder::Unrolled);
    for (int64_t i = 0; i < cnt; ++i) {
      float* o = out + rows[i] * n_embd;
      const float* yi = y + i * n_embd;
      for (int64_t d = 0; d < n_embd; ++d) o[d] += row_w[i] * yi[d];
    }
  }

  // 3. Shared expert, gated by sigmoid(h · g).
  if (w.shexp.up) {
    float* sh = grow(s.ws.ffn_out, n * n_embd);
    feed_forward(s, w.shexp, Activation::Silu, h, n, sh);
    float* g = grow(s.ws.shexp_gate, n);
    if (w.shexp_gate_inp) {
      linear(s, w.shexp_gate_inp, Tensor{}, h, n, g);
    }
    for (int64_t t = 0; t < n; ++t) {
      const float scale = w.shexp_gate_inp ? cpu::sigmoid(g[t]) : 1.0f;
      for (int64_t d = 0; d < n_embd; ++d) out[t * n_embd + d] += scale * sh[t * n_embd + d];
    }
  }
}

}  // namespace ferrite::model
