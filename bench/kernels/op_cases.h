// The kernels around the matrix products, each alone on realistic shapes:
//   attn_decode   one token over a KV cache of depth D (f16 cache): streams K and V
//   attn_prefill  T tokens over their own T cells, causal mask: compute-bound
//   rms_norm      [T, n_embd]
//   rope          [T, n_head, head_dim] in place (angle table precomputed, as per batch)
//   swiglu        silu(gate) * up over [T, n_ff] (gated feed-forward, SiLU)
//   geglu         gelu(gate) * up over [T, n_ff] (gated feed-forward, GELU as the
//                 models evaluate it: the f16 table, cpu/ops/gelu_f16.h)
// Attention runs on the pool (as the runtime calls it); the others run on
// one thread, as the runtime calls them, and are held against the limits of
// one thread. Outputs are written apart from the inputs so that repeated
// calls see the same values (an activation applied to its own output again
// and again decays to denormals, which would time something else).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "cpu/ops/activations.h"
#include "cpu/attention/attention.h"
#include "cpu/attention/attention_avx2.h"
#include "cpu/attention/attention_avx512.h"
#include "cpu/features.h"
#include "cpu/ops/gelu_f16.h"
#include "cpu/ops/norm.h"
#include "cpu/ops/rope.h"
#include "lab.h"

namespace ferrite::kbench {

constexpr float kRmsEps = 1e-5f;
constexpr float kRopeBase = 10000.0f;
// Arithmetic per element, nominal (a transcendental counts as one operation).
constexpr double kRmsOps = 4.0;     // square, add, scale, weight
constexpr double kRopeOps = 3.0;    // per pair: 4 multiplies, 2 adds
constexpr double kSwigluOps = 5.0;  // exp, add, divide, multiply by x, by up
constexpr double kGegluOps = 9.0;   // x^3, polynomial, tanh, 1 +, halves, times x, times up
// Per (token, head, visible cell): q.k and p.v, a multiply-add per dimension each.
constexpr double kAttnOpsPerDim = 4.0;

inline std::string dims(std::initializer_list<int64_t> v) {
  std::string s;
  for (int64_t d : v) {
    if (!s.empty()) s.push_back('x');
    s.append(std::to_string(d));
  }
  return s;
}

inline void attention_case(Lab& lab, const char* op, int64_t tokens, int64_t depth, bool causal) {
  const Options& o = lab.opt();
  char shape[128];
  std::snprintf(shape, sizeof(shape), "t=%lld d=%lld heads=%lld/%lld hd=%lld", static_cast<long long>(tokens),
                static_cast<long long>(depth), static_cast<long long>(o.n_head), static_cast<long long>(o.n_head_kv),
                static_cast<long long>(o.head_dim));
  if (!lab.selected(op, "f16", shape)) return;
  const int64_t kv_dim = o.n_head_kv * o.head_dim;
  const int64_t cache_elems = depth * kv_dim;  // K: [depth, kv_dim]; V transposed: [kv_dim, depth]
  Rotation cache(2 * static_cast<size_t>(cache_elems) * kF16Bytes, lab.cold_bytes());
  {
    std::vector<float> vals(static_cast<size_t>(2 * cache_elems));
    fill_normal(vals.data(), vals.size(), lab.rng());
    auto* dst = reinterpret_cast<uint16_t*>(cache.slot(0));
    for (size_t i = 0; i < vals.size(); ++i) dst[i] = fp32_to_fp16(vals[i]);
    cache.replicate();
  }
  const int64_t q_elems = tokens * o.n_head * o.head_dim;  // [tokens, n_head, head_dim]
  std::vector<float> q(static_cast<size_t>(q_elems)), out(static_cast<size_t>(q_elems));
  fill_normal(q.data(), q.size(), lab.rng());
  // Causal: token t (at position depth - tokens + t) sees cells up to its own.
  std::vector<float> mask(static_cast<size_t>(tokens * depth), 0.0f);  // [tokens, depth]
  double visible = static_cast<double>(tokens * depth);
  if (causal) {
    visible = 0.0;
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t last = depth - tokens + t;
      for (int64_t j = last + 1; j < depth; ++j) mask[t * depth + j] = -std::numeric_limits<float>::infinity();
      visible += static_cast<double>(last + 1);
    }
  }
  cpu::AttentionScratch scratch;
  cpu::AttentionArgs args;
  args.q = q.data();
  args.vt_stride = depth;
  args.kv_stride = kv_dim;
  args.n_kv = depth;
  args.mask = mask.data();
  args.n_tokens = tokens;
  args.n_head = o.n_head;
  args.n_head_kv = o.n_head_kv;
  args.head_dim = o.head_dim;
  args.scale = 1.0f / std::sqrt(static_cast<float>(o.head_dim));
  args.out = out.data();
  const auto call = [&](int64_t i) {
    cpu::AttentionArgs a = args;
    a.k = reinterpret_cast<const uint16_t*>(cache.slot(i));
    a.vt = a.k + cache_elems;
    cpu::attention(a, lab.pool(), scratch);
  };
  Row r;
  r.op = op;
  r.type = "f16";
  r.shape = shape;
  // The kernel cpu::attention dispatches to (the same tests, in its order).
  const cpu::Isa isa = cpu::active_isa();
  if (isa == cpu::Isa::Avx512 && cpu::attention_avx512_applies(args)) {
    r.kernel = "query blocks (avx512)";
  } else if (isa == cpu::Isa::Avx2 && cpu::attention_avx2_applies(args)) {
    r.kernel = "query blocks (avx2)";
  } else {
    r.kernel = "f16 dots (" + cpu::isa_name(isa) + ")";
  }
  r.threads = lab.pool().size();
  r.time = time_calls(call, lab.plan());
  r.bytes = static_cast<double>(2 * cache_elems * kF16Bytes + 2 * q_elems * kF32Bytes + mask.size() * kF32Bytes);
  r.ops = kAttnOpsPerDim * static_cast<double>(o.n_head * o.head_dim) * visible;
  lab.emit(r, cpu::PeakKind::F32Fma);
}

inline void run_attention(Lab& lab) {
  for (int64_t d : lab.opt().depth) attention_case(lab, "attn_decode", 1, d, false);
  int64_t t_max = 1;
  for (int64_t m : lab.opt().m) t_max = std::max(t_max, m);
  if (t_max > 1) attention_case(lab, "attn_prefill", t_max, t_max, true);
}

// A one-thread op on `slot_floats` floats of operands per call, cycled through cold copies.
template <typename Fn>
void single_thread_case(Lab& lab, const std::string& op, const std::string& shape, size_t slot_floats,
                        double bytes, double ops, Fn&& fn) {
  if (!lab.selected(op, "f32", shape)) return;
  Rotation slots(slot_floats * kF32Bytes, lab.cold_bytes());
  fill_normal(reinterpret_cast<float*>(slots.slot(0)), slot_floats, lab.rng());
  slots.replicate();
  Row r;
  r.op = op;
  r.type = "f32";
  r.shape = shape;
  r.kernel = cpu::isa_name(cpu::active_isa());
  r.threads = 1;
  r.time = time_calls([&](int64_t i) { fn(reinterpret_cast<float*>(slots.slot(i))); }, lab.plan());
  r.bytes = bytes;
  r.ops = ops;
  lab.emit(r, cpu::PeakKind::F32Fma);
}

inline void run_row_ops(Lab& lab) {
  const Options& o = lab.opt();
  const int64_t n_embd = o.n_head * o.head_dim;
  std::vector<float> norm_w(static_cast<size_t>(n_embd));
  fill_normal(norm_w.data(), norm_w.size(), lab.rng());
  for (int64_t t : o.m) {
    const auto te = static_cast<double>(t * n_embd);
    // x [t, n_embd] then y [t, n_embd].
    single_thread_case(lab, "rms_norm", dims({t, n_embd}), static_cast<size_t>(2 * t * n_embd),
                       2 * kF32Bytes * te + kF32Bytes * static_cast<double>(n_embd), kRmsOps * te, [&](float* s) {
                         cpu::rms_norm(s, norm_w.data(), kRmsEps, t, n_embd, s + t * n_embd);
                       });
    // Angle tables [t, head_dim / 2], once per batch.
    cpu::RopeConfig cfg;
    cfg.n_rot = static_cast<int>(o.head_dim);
    cfg.freq_base = kRopeBase;
    std::vector<int32_t> pos(static_cast<size_t>(t));
    for (int64_t i = 0; i < t; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    const int64_t half = o.head_dim / 2;
    std::vector<float> cos_t(static_cast<size_t>(t * half)), sin_t(static_cast<size_t>(t * half));
    cpu::rope_table(cfg, pos.data(), t, cos_t.data(), sin_t.data());
    single_thread_case(lab, "rope", dims({t, o.n_head, o.head_dim}), static_cast<size_t>(t * n_embd),
                       2 * kF32Bytes * te + 2 * kF32Bytes * static_cast<double>(t * half), kRopeOps * te,
                       [&](float* s) { cpu::rope_apply(cfg, cos_t.data(), sin_t.data(), s, t, o.n_head, o.head_dim); });
    const auto tf = static_cast<double>(t * o.n_ff);
    const int64_t ff = t * o.n_ff;
    // gate [t, n_ff], up [t, n_ff], y [t, n_ff].
    single_thread_case(lab, "swiglu", dims({t, o.n_ff}), static_cast<size_t>(3 * ff), 3 * kF32Bytes * tf,
                       kSwigluOps * tf, [&](float* s) { cpu::swiglu(s, s + ff, t, o.n_ff, s + 2 * ff); });
    single_thread_case(lab, "geglu", dims({t, o.n_ff}), static_cast<size_t>(3 * ff), 3 * kF32Bytes * tf,
                       kGegluOps * tf, [&](float* s) { cpu::geglu_f16(s, s + ff, ff, s + 2 * ff); });
  }
}

}  // namespace ferrite::kbench
