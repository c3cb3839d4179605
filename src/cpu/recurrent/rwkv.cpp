#include "cpu/recurrent/rwkv.h"

#include <algorithm>
#include <cmath>

namespace ferrite::cpu {
namespace {

float sigm(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

void rwkv_act(RwkvAct act, float* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = x[i];
    switch (act) {
      case RwkvAct::Tanh: x[i] = std::tanh(v); break;
      case RwkvAct::Sigmoid: x[i] = sigm(v); break;
      case RwkvAct::Silu: x[i] = v * sigm(v); break;
      case RwkvAct::ReluSqr: x[i] = v > 0.0f ? v * v : 0.0f; break;
    }
  }
}

void rwkv_mul(float* x, const float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] *= y[i];
}

void rwkv6_decay(float* w, const float* d0, int64_t n, int64_t n_embd) {
  for (int64_t i = 0; i < n * n_embd; ++i) w[i] = std::exp(-std::exp(w[i] + d0[i % n_embd]));
}

void rwkv7_value_residual(float* v, const float* v_first, const float* m, const float* v0, int64_t n,
                          int64_t n_embd) {
  for (int64_t i = 0; i < n * n_embd; ++i) v[i] += (v_first[i] - v[i]) * sigm(m[i] + v0[i % n_embd]);
}

void rwkv7_prepare(const Rwkv7Vectors& p, int64_t n, int64_t n_embd, int64_t hs, float* dw, float* a, float* k,
                   float* kk, float* b) {
  for (int64_t q = 0; q < n * n_embd; q += hs) {
    const int64_t o = q % n_embd;
    float ss = 0.0f;
    for (int64_t i = 0; i < hs; ++i) {
      const int64_t c = o + i;
      dw[q + i] = std::exp(-0.606531f * sigm(dw[q + i] + p.w0[c]));
      a[q + i] = sigm(a[q + i] + p.a0[c]);
      kk[q + i] = k[q + i] * p.k_k[c];
      k[q + i] *= 1.0f + (a[q + i] - 1.0f) * p.k_a[c];
      ss += kk[q + i] * kk[q + i];
    }
    const float inv = 1.0f / std::max(std::sqrt(ss), 1e-12f);
    for (int64_t i = 0; i < hs; ++i) {
      const float kn = kk[q + i] * inv;
      b[q + i] = kn * a[q + i];
      kk[q + i] = -kn;
    }
  }
}

void rwkv7_bonus(float* y, const float* r, const float* k, const float* v, const float* r_k, int64_t n,
                 int64_t n_embd, int64_t hs) {
  for (int64_t q = 0; q < n * n_embd; q += hs) {
    const int64_t o = q % n_embd;
    float s = 0.0f;
    for (int64_t i = 0; i < hs; ++i) s += r[q + i] * k[q + i] * r_k[o + i];
    for (int64_t i = 0; i < hs; ++i) y[q + i] += s * v[q + i];
  }
}

void rwkv_shift(const float* h, int64_t n, int64_t n_embd, const int32_t* slot, float* rows, int64_t row_stride,
                float* sx) {
  for (int64_t t = 0; t < n; ++t) {
    float* row = rows + slot[t] * row_stride;
    const float* ht = h + t * n_embd;
    float* st = sx + t * n_embd;
    for (int64_t c = 0; c < n_embd; ++c) {
      st[c] = row[c] - ht[c];
      row[c] = ht[c];
    }
  }
}

void rwkv_mix(const float* h, const float* sx, const float* lerp, const float* m, int64_t n, int64_t n_embd,
              float* out) {
  for (int64_t t = 0; t < n; ++t) {
    const int64_t o = t * n_embd;
    for (int64_t c = 0; c < n_embd; ++c) {
      const float l = m != nullptr ? m[o + c] + lerp[c] : lerp[c];
      out[o + c] = h[o + c] + sx[o + c] * l;
    }
  }
}

void rwkv_wkv6_token(int64_t n_head, int64_t hs, float* state, const float* r, const float* k, const float* v,
                     const float* w, const float* u, float* y) {
  for (int64_t h = 0; h < n_head; ++h) {
    const int64_t o = h * hs;
    float* S = state + h * hs * hs;
    float* yh = y + o;
    std::fill_n(yh, hs, 0.0f);
    for (int64_t i = 0; i < hs; ++i) {
      const float ki = k[o + i], ri = r[o + i], ui = u[o + i], wi = w[o + i];
      float* Si = S + i * hs;
      for (int64_t j = 0; j < hs; ++j) {
        const float kv = ki * v[o + j];
        yh[j] += ri * (Si[j] + ui * kv);
        Si[j] = wi * Si[j] + kv;
      }
    }
  }
}

void rwkv_gla_token(int64_t n_head, int64_t hs, float* state, const float* r, const float* k, const float* v,
                    const float* w, float scale, float* y) {
  for (int64_t h = 0; h < n_head; ++h) {
    const int64_t o = h * hs;
    float* S = state + h * hs * hs;
    float* yh = y + o;
    std::fill_n(yh, hs, 0.0f);
    for (int64_t i = 0; i < hs; ++i) {
      const float ki = k[o + i], ri = r[o + i] * scale, wi = w[o + i];
      float* Si = S + i * hs;
      for (int64_t j = 0; j < hs; ++j) {
        Si[j] = Si[j] * wi + ki * v[o + j];
        yh[j] += ri * Si[j];
      }
    }
  }
}

void rwkv_repeat_heads(const float* src, int64_t n, int64_t n_kv, int64_t group, int64_t hs, float* dst) {
  const int64_t heads = n_kv * group;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < heads; ++h) std::copy_n(src + (t * n_kv + h / group) * hs, hs, dst + (t * heads + h) * hs);
  }
}

void rwkv_key_decay(float* k, const float* w, int64_t count) {
  for (int64_t i = 0; i < count; ++i) k[i] -= k[i] * w[i];
}

void rwkv_wkv7_token(int64_t n_head, int64_t hs, float* state, const float* r, const float* w, const float* k,
                     const float* v, const float* a, const float* b, float* y) {
  for (int64_t h = 0; h < n_head; ++h) {
    const int64_t o = h * hs;
    float* S = state + h * hs * hs;
    for (int64_t i = 0; i < hs; ++i) {
      float* Si = S + i * hs;
      float sa = 0.0f;
      for (int64_t j = 0; j < hs; ++j) sa += a[o + j] * Si[j];
      const float vi = v[o + i];
      float acc = 0.0f;
      for (int64_t j = 0; j < hs; ++j) {
        Si[j] = Si[j] * w[o + j] + vi * k[o + j] + sa * b[o + j];
        acc += Si[j] * r[o + j];
      }
      y[o + i] = acc;
    }
  }
}

void rwkv_group_norm(float* y, int64_t n, int64_t n_embd, int64_t hs, float eps, const float* ln, const float* ln_b) {
  for (int64_t q = 0; q < n * n_embd; q += hs) {
    const int64_t o = q % n_embd;
    float* g = y + q;
    double mean = 0.0;
    for (int64_t i = 0; i < hs; ++i) mean += g[i];
    mean /= static_cast<double>(hs);
    double var = 0.0;
    for (int64_t i = 0; i < hs; ++i) var += (g[i] - mean) * (g[i] - mean);
    var /= static_cast<double>(hs);
    const auto inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    const auto m = static_cast<float>(mean);
    for (int64_t i = 0; i < hs; ++i) g[i] = (g[i] - m) * inv * ln[o + i] + ln_b[o + i];
  }
}

}  // namespace ferrite::cpu
