// The feed-forward variants and the mixture of experts on the CPU
// (CpuBackend::feed_forward, moe).
#include <algorithm>
#include <numeric>
#include <vector>

#include "cpu/ops/activations.h"
#include "cpu/attention/attn_temperature.h"
#include "cpu/backend/cpu_backend.h"
#include "cpu/ops/gelu_f16.h"
#include "cpu/matmul.h"
#include "cpu/ops/relu_sqr.h"
#include "cpu/ops/sparsemixer.h"

namespace ferrite::cpu {
namespace {

// y [rows, n] += expert e's row of a stacked bias [n, n_expert] (absent: nothing).
void add_expert_bias(const backend::Weight& b, int64_t e, float* y, int64_t rows, int64_t n) {
  if (!b) return;
  const float* be = b.f32() + e * n;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < n; ++i) y[r * n + i] += be[i];
  }
}

}  // namespace

void CpuBackend::ffn_gated(const backend::FfnWeights& w, bool gelu, const float* h, int64_t n, float* out) {
  const int64_t n_ff = w.up.rows();
  float* up = grow(ws_.ffn_b, n * n_ff);
  product(w.up, w.up_b, h, n, up);
  if (w.gate) {
    float* gate = grow(ws_.ffn_a, n * n_ff);
    product(w.gate, w.gate_b, h, n, gate);
    pool_.run_split(n, [&](int64_t t0, int64_t t1) {
      const int64_t at = t0 * n_ff;
      if (gelu) {
        geglu_f16(gate + at, up + at, (t1 - t0) * n_ff, up + at);
      } else {
        swiglu(gate + at, up + at, t1 - t0, n_ff, up + at);
      }
    }, n * n_ff);
  } else {
    pool_.run_split(n, [&](int64_t t0, int64_t t1) {
      const int64_t at = t0 * n_ff;
      if (gelu) {
        gelu_f16_inplace(up + at, (t1 - t0) * n_ff);
      } else {
        silu_inplace(up + at, t1 - t0, n_ff);
      }
    }, n * n_ff);
  }
  product(w.down, w.down_b, up, n, out);
}

void CpuBackend::feed_forward(const backend::FfnSpec& spec, backend::Act h_act, backend::Act out, bool accumulate) {
  const backend::FfnWeights& w = *spec.w;
  const float* h = h_act.data;
  const int64_t n = h_act.rows;
  float* y = target(out, accumulate);
  if (spec.kind == backend::FfnKind::FusedSwiGlu) {
    const int64_t n_ff2 = w.up.rows();  // gate and up, side by side
    const int64_t n_ff = n_ff2 / 2;
    float* gu = grow(ws_.ffn_b, n * n_ff2);
    float* act = grow(ws_.ffn_a, n * n_ff);
    product(w.up, backend::Weight{}, h, n, gu);
    pool_.run_split(n, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) swiglu(gu + t * n_ff2, gu + t * n_ff2 + n_ff, n_ff, act + t * n_ff);
    }, n * n_ff);
    product(w.down, backend::Weight{}, act, n, y);
  } else if (spec.kind == backend::FfnKind::ReluSqr || spec.kind == backend::FfnKind::Relu) {
    float* up = grow(ws_.ffn_b, n * w.up.rows());
    product(w.up, w.up_b, h, n, up);
    if (spec.kind == backend::FfnKind::Relu) {
      relu_inplace(up, n * w.up.rows());
    } else {
      relu_sqr_inplace(up, n * w.up.rows());
    }
    product(w.down, w.down_b, up, n, y);
  } else {
    // GELU as llama.cpp computes it (cpu/ops/gelu_f16.h).
    ffn_gated(w, spec.kind == backend::FfnKind::GeluF16, h, n, y);
  }
  finish(out, accumulate);
}

void CpuBackend::moe(const backend::MoeWeights& w, backend::Act h_act, backend::Act out_act, bool accumulate) {
  const float* h = h_act.data;
  const int64_t n = h_act.rows, n_embd = dims_.n_embd;
  const int64_t n_expert = dims_.n_expert, k_used = dims_.n_expert_used;
  float* out = target(out_act, accumulate);

  // 1. Router: probabilities [n, n_expert]; top-k per token.
  float* probs = grow(ws_.router, n * n_expert);
  product(w.gate_inp, w.gate_inp_b, h, n, probs);
  std::vector<int32_t> chosen(static_cast<size_t>(n * k_used));
  std::vector<float> weight(static_cast<size_t>(n * k_used));
  std::vector<int32_t> order(static_cast<size_t>(n_expert));
  // The choice ranks probabilities plus the optional selection bias (DeepSeek-V3); the weights are the probabilities.
  const float* bias = w.probs_bias ? w.probs_bias.f32() : nullptr;
  std::vector<float> key(static_cast<size_t>(n_expert));
  for (int64_t t = 0; t < n; ++t) {
    float* p = probs + t * n_expert;
    if (w.gating == backend::MoeGating::SparseMixer) {
      sparsemixer_route(p, n_expert, k_used, w.jitter, chosen.data() + t * k_used, weight.data() + t * k_used);
      for (int64_t j = 0; j < k_used; ++j) weight[t * k_used + j] *= w.weights_scale;
      continue;
    }
    if (w.gating == backend::MoeGating::Sigmoid) {
      for (int64_t e = 0; e < n_expert; ++e) p[e] = sigmoid(p[e]);
    } else if (w.gating == backend::MoeGating::SoftmaxWeight) {
      // the choice on the logits themselves; the softmax over the chosen below
    } else {
      softmax_inplace(p, n_expert);
    }
    for (int64_t e = 0; e < n_expert; ++e) key[static_cast<size_t>(e)] = bias != nullptr ? p[e] + bias[e] : p[e];
    const float* kp = key.data();
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [kp](int32_t a, int32_t b) { return kp[a] > kp[b]; });
    float sum = 0.0f;
    for (int64_t j = 0; j < k_used; ++j) {
      chosen[t * k_used + j] = order[j];
      weight[t * k_used + j] = p[order[j]];
      sum += p[order[j]];
    }
    if (w.gating == backend::MoeGating::SoftmaxWeight) {
      softmax_inplace(weight.data() + t * k_used, k_used);
      sum = 1.0f;
    }
    for (int64_t j = 0; j < k_used; ++j) {
      if (w.norm_weights) weight[t * k_used + j] /= sum;
      weight[t * k_used + j] *= w.weights_scale;
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
    const MatView gate = expert_view(w.gate_exps, e), up = expert_view(w.up_exps, e),
                  down = expert_view(w.down_exps, e);
    const int64_t n_ff = up.n;
    float* in = grow(ws_.moe_in, cnt * n_embd);
    for (int64_t i = 0; i < cnt; ++i) std::copy_n(h + rows[i] * n_embd, n_embd, in + i * n_embd);
    if (w.weight_input) {
      // llama4: the weight scales the expert's input; its output adds unweighted.
      std::vector<int32_t> seq(static_cast<size_t>(cnt));
      std::iota(seq.begin(), seq.end(), 0);
      moe_weight_inputs(in, seq.data(), row_w.data(), cnt, n_embd);
    }
    float* a = grow(ws_.moe_a, cnt * n_ff);
    float* b = grow(ws_.moe_b, cnt * n_ff);
    if (ws_.observer != nullptr) {
      ws_.observer->on_matmul(*w.gate_exps.info, e, in, cnt, n_embd);
      ws_.observer->on_matmul(*w.up_exps.info, e, in, cnt, n_embd);
    }
    // Expert products in llama.cpp's vector-dot summation order (its mul_mat_id).
    matmul(gate, in, cnt, a, pool_, ws_.matmul, DotOrder::Unrolled);
    matmul(up, in, cnt, b, pool_, ws_.matmul, DotOrder::Unrolled);
    add_expert_bias(w.gate_exps_b, e, a, cnt, n_ff);
    add_expert_bias(w.up_exps_b, e, b, cnt, n_ff);
    if (w.oai_alpha > 0.0f) {
      swiglu_oai(a, b, cnt * n_ff, w.oai_alpha, w.oai_limit, b);
    } else {
      swiglu(a, b, cnt, n_ff, b);
    }
    if (ws_.observer != nullptr) ws_.observer->on_matmul(*w.down_exps.info, e, b, cnt, n_ff);
    float* y = grow(ws_.moe_out, cnt * n_embd);
    matmul(down, b, cnt, y, pool_, ws_.matmul, DotOrder::Unrolled);
    add_expert_bias(w.down_exps_b, e, y, cnt, n_embd);
    for (int64_t i = 0; i < cnt; ++i) {
      float* o = out + rows[i] * n_embd;
      const float* yi = y + i * n_embd;
      for (int64_t d = 0; d < n_embd; ++d) o[d] += row_w[i] * yi[d];
    }
  }

  // 3. Shared expert, gated by sigmoid(h · g).
  if (w.shexp.up) {
    float* sh = grow(ws_.ffn_out, n * n_embd);
    ffn_gated(w.shexp, /*gelu=*/false, h, n, sh);
    float* g = grow(ws_.shexp_gate, n);
    if (w.shexp_gate_inp) product(w.shexp_gate_inp, backend::Weight{}, h, n, g);
    for (int64_t t = 0; t < n; ++t) {
      const float scale = w.shexp_gate_inp ? sigmoid(g[t]) : 1.0f;
      for (int64_t d = 0; d < n_embd; ++d) out[t * n_embd + d] += scale * sh[t * n_embd + d];
    }
  }
  finish(out_act, accumulate);
}

}  // namespace ferrite::cpu
