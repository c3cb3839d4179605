// Row kernels and attention on the GPU against the CPU kernels (src/cpu)
// on fresh random inputs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "core/error.h"
#include "cpu/dot/act_quant.h"
#include "cpu/ops/activations.h"
#include "cpu/attention/attention.h"
#include "cpu/ops/norm.h"
#include "cpu/ops/rope.h"
#include "cuda/kernels/ops.h"
#include "device_util.h"
#include "quant/type_traits.h"

namespace ferrite::cuda {
namespace {

using test::fresh_rng;
using test::random_floats;
using test::to_device;
using test::to_host;

void expect_near_all(const std::vector<float>& gpu, const std::vector<float>& ref, double rel_tol) {
  ASSERT_EQ(gpu.size(), ref.size());
  double scale = 0;
  for (float v : ref) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_FALSE(std::isnan(gpu[i])) << "element " << i << " unwritten";
    ASSERT_LE(std::fabs(gpu[i] - ref[i]), rel_tol * scale) << "element " << i;
  }
}

TEST(GpuOps, RmsNorm) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kRows = 7, kN = 1000;
  const auto x = random_floats(kRows * kN, rng, -4.0f, 4.0f);
  const auto w = random_floats(kN, rng);
  std::vector<float> ref(x.size());
  cpu::rms_norm(x.data(), w.data(), 1e-5f, kRows, kN, ref.data());
  DeviceBuffer xd = to_device(x), wd = to_device(w), yd = test::poisoned(x.size());
  rms_norm(xd.as<float>(), wd.as<float>(), 1e-5f, kRows, kN, yd.as<float>(), nullptr);
  expect_near_all(to_host<float>(yd, x.size()), ref, 1e-6);
}

// The kernel applies cpu::rope_table's angles (plain, and YaRN's with the
// correction range rounded and fractional, gpt-oss's) as cpu::rope_apply does.
TEST(GpuOps, RopeNormalAndNeox) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kTokens = 5, kHeads = 3, kHeadDim = 64;
  struct Variant {
    bool neox;
    int yarn;  // 0 none, 1 rounded range, 2 fractional range
  };
  for (const Variant var : {Variant{false, 0}, Variant{true, 0}, Variant{true, 1}, Variant{true, 2}}) {
    const bool neox = var.neox;
    SCOPED_TRACE(std::string(neox ? "neox" : "adjacent pairs") + ", yarn " + std::to_string(var.yarn));
    cpu::RopeConfig cfg;
    cfg.n_rot = 48;  // partial rotary: the last 16 dimensions pass through
    cfg.neox = neox;
    if (var.yarn != 0) {
      cfg.freq_scale = 0.25f;
      cfg.ext_factor = 1.0f;
      cfg.n_ctx_orig = 32;
      cfg.yarn_truncate = var.yarn == 1;
    }
    std::vector<int32_t> pos = {0, 3, 17, 100, 4095};
    std::vector<float> cos_t(kTokens * cfg.n_rot / 2), sin_t(cos_t.size());
    cpu::rope_table(cfg, pos.data(), kTokens, cos_t.data(), sin_t.data());
    const auto x = random_floats(kTokens * kHeads * kHeadDim, rng);
    std::vector<float> ref = x;
    cpu::rope_apply(cfg, cos_t.data(), sin_t.data(), ref.data(), kTokens, kHeads, kHeadDim);
    DeviceBuffer xd = to_device(x), cd = to_device(cos_t), sd = to_device(sin_t);
    rope(xd.as<float>(), cd.as<float>(), sd.as<float>(), kTokens, kHeads, kHeadDim, cfg.n_rot, neox, nullptr);
    expect_near_all(to_host<float>(xd, x.size()), ref, 1e-7);
  }
}

// One token: q|k rotated and k, v written into a cache row by one launch,
// against cpu::rope_apply and the CPU's f16 rounding.
TEST(GpuOps, RopeAndStoreKvOneToken) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kHeads = 4, kHeadsKv = 2, kHeadDim = 64, kCells = 5, kSlot = 3;
  constexpr int64_t kKv = kHeadsKv * kHeadDim;
  for (bool neox : {false, true}) {
    SCOPED_TRACE(neox ? "neox" : "adjacent pairs");
    cpu::RopeConfig cfg;
    cfg.n_rot = 48;  // partial rotary: the last 16 dimensions pass through
    cfg.neox = neox;
    const std::vector<int32_t> pos = {37};
    std::vector<float> cos_t(cfg.n_rot / 2), sin_t(cos_t.size());
    cpu::rope_table(cfg, pos.data(), 1, cos_t.data(), sin_t.data());
    const auto qk = random_floats((kHeads + kHeadsKv) * kHeadDim, rng);
    const auto v = random_floats(kKv, rng);
    std::vector<float> ref = qk;
    cpu::rope_apply(cfg, cos_t.data(), sin_t.data(), ref.data(), 1, kHeads + kHeadsKv, kHeadDim);
    DeviceBuffer qkd = to_device(qk), vd = to_device(v), cd = to_device(cos_t), sd = to_device(sin_t);
    const std::vector<int32_t> slot = {static_cast<int32_t>(kSlot)};
    DeviceBuffer slotd = to_device(slot);
    DeviceBuffer kc(kCells * kKv * 2), vc(kCells * kKv * 2);
    FERRITE_CUDA_CHECK(cudaMemset(kc.as(), 0, kCells * kKv * 2));
    FERRITE_CUDA_CHECK(cudaMemset(vc.as(), 0, kCells * kKv * 2));
    rope_store_kv(qkd.as<float>(), vd.as<float>(), cd.as<float>(), sd.as<float>(), kHeads, kHeadsKv, kHeadDim,
                  cfg.n_rot, neox, slotd.as<int32_t>(), kc.as<uint16_t>(), vc.as<uint16_t>(), nullptr);
    expect_near_all(to_host<float>(qkd, qk.size()), ref, 1e-7);
    const auto kh = to_host<uint16_t>(kc, kCells * kKv), vh = to_host<uint16_t>(vc, kCells * kKv);
    for (int64_t i = 0; i < kKv; ++i) {
      // The rotated k as the CPU computes it, rounded as the CPU rounds it (one f16 ulp for an FMA difference).
      EXPECT_NEAR(fp16_to_fp32(kh[kSlot * kKv + i]), fp16_to_fp32(fp32_to_fp16(ref[kHeads * kHeadDim + i])), 1e-3)
          << "k " << i;
      EXPECT_EQ(vh[kSlot * kKv + i], fp32_to_fp16(v[i])) << "v " << i;
    }
    for (int64_t c = 0; c < kCells; ++c) {
      if (c == kSlot) continue;
      for (int64_t i = 0; i < kKv; ++i) ASSERT_EQ(kh[c * kKv + i] | vh[c * kKv + i], 0) << "cell " << c;
    }
  }
}

TEST(GpuOps, SwiGlu) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kRows = 3, kN = 1000;  // 1000 % 16 != 0: the tail uses libm's exp
  const auto g = random_floats(kRows * kN, rng, -8.0f, 8.0f), u = random_floats(kRows * kN, rng);
  std::vector<float> ref(g.size());
  cpu::swiglu(g.data(), u.data(), kRows, kN, ref.data());
  DeviceBuffer gd = to_device(g), ud = to_device(u), yd = test::poisoned(g.size());
  swiglu(gd.as<float>(), ud.as<float>(), kRows, kN, yd.as<float>(), nullptr);
  expect_near_all(to_host<float>(yd, g.size()), ref, 1e-6);
}

// The converted output of rms_norm_act / swiglu_act against the CPU's
// conversion of the f32 output the same kernel wrote (which the caller
// checks against the CPU kernel): 8-bit blocks dequantize to the CPU's round
// trip exactly and carry their sums; f16 values are the CPU's rounding.
void expect_conversion(const ActOut& out, const DeviceBuffer& y_dev, int64_t rows, int64_t n) {
  const size_t count = static_cast<size_t>(rows * n);
  const std::vector<float> y = to_host<float>(y_dev, count);
  if (out.f16 != nullptr) {
    std::vector<uint16_t> h(count);
    FERRITE_CUDA_CHECK(cudaMemcpy(h.data(), out.f16, count * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(h[i], fp32_to_fp16(y[i])) << "element " << i;
    return;
  }
  std::vector<int8_t> q(count);
  std::vector<float> d(count / 32);
  std::vector<int32_t> sums(count / 32);
  FERRITE_CUDA_CHECK(cudaMemcpy(q.data(), out.quant.qs, count, cudaMemcpyDeviceToHost));
  FERRITE_CUDA_CHECK(cudaMemcpy(d.data(), out.quant.d, d.size() * sizeof(float), cudaMemcpyDeviceToHost));
  FERRITE_CUDA_CHECK(cudaMemcpy(sums.data(), out.quant.sums, sums.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
  std::vector<float> ref(count);
  cpu::act_quant_round_trip(out.format == ActFormat::Q8_0 ? cpu::ActQuant::Q8_0 : cpu::ActQuant::Q8_K, y.data(),
                            ref.data(), static_cast<int64_t>(count));
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(d[i / 32] * static_cast<float>(q[i]), ref[i]) << "element " << i;
  for (size_t b = 0; b < sums.size(); ++b) {
    int32_t sum = 0;
    for (size_t j = 0; j < 32; ++j) sum += q[b * 32 + j];
    ASSERT_EQ(sums[b], sum) << "block " << b;
  }
}

// Buffers for a converted output of [rows, n] in form f (0: Q8_0, 1: Q8_K, 2: f16).
struct OutBuffers {
  DeviceBuffer qs, d, sums, f16;
  ActOut out;
  OutBuffers(int form, int64_t rows, int64_t n)
      : qs(static_cast<size_t>(rows * n)), d(static_cast<size_t>(rows * n / 32) * 4),
        sums(static_cast<size_t>(rows * n / 32) * 4), f16(static_cast<size_t>(rows * n) * 2) {
    if (form == 2) {
      out.f16 = f16.as<uint16_t>();
    } else {
      out.format = form == 0 ? ActFormat::Q8_0 : ActFormat::Q8_K;
      out.quant = QuantAct{qs.as<int8_t>(), d.as<float>(), sums.as<int32_t>()};
    }
  }
};

TEST(GpuOps, RmsNormWithConversion) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kRows = 3;
  // 4096: whole warp groups; 1056: a last group of 4 Q8_0 blocks; 8448: more groups than warps.
  for (int64_t n : {int64_t{4096}, int64_t{1056}, int64_t{8448}}) {
    for (int form = 0; form < 3; ++form) {
      if (form == 1 && n % 256 != 0) continue;
      SCOPED_TRACE("n=" + std::to_string(n) + " form=" + std::to_string(form));
      const auto x = random_floats(kRows * n, rng, -4.0f, 4.0f);
      const auto w = random_floats(n, rng);
      std::vector<float> ref(x.size());
      cpu::rms_norm(x.data(), w.data(), 1e-5f, kRows, n, ref.data());
      DeviceBuffer xd = to_device(x), wd = to_device(w), yd = test::poisoned(x.size());
      OutBuffers ob(form, kRows, n);
      ASSERT_TRUE(act_out_supports(ob.out, n));
      rms_norm_act(xd.as<float>(), wd.as<float>(), 1e-5f, kRows, n, yd.as<float>(), ob.out, nullptr);
      expect_near_all(to_host<float>(yd, x.size()), ref, 1e-6);
      expect_conversion(ob.out, yd, kRows, n);
    }
  }
}

TEST(GpuOps, SwiGluWithConversion) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kRows = 2;
  // 11008 (ffn of 7B): 43 groups per row; 1056: a partial last group.
  for (int64_t n : {int64_t{11008}, int64_t{1056}}) {
    for (int form = 0; form < 3; ++form) {
      if (form == 1 && n % 256 != 0) continue;
      SCOPED_TRACE("n=" + std::to_string(n) + " form=" + std::to_string(form));
      const auto g = random_floats(kRows * n, rng, -8.0f, 8.0f), u = random_floats(kRows * n, rng);
      std::vector<float> ref(g.size());
      cpu::swiglu(g.data(), u.data(), kRows, n, ref.data());
      DeviceBuffer gd = to_device(g), ud = to_device(u);
      OutBuffers ob(form, kRows, n);
      swiglu_act(gd.as<float>(), ud.as<float>(), kRows, n, ud.as<float>(), ob.out, nullptr);  // in place, as decode
      expect_near_all(to_host<float>(ud, g.size()), ref, 1e-6);
      expect_conversion(ob.out, ud, kRows, n);
    }
  }
  // Shapes that do not fit a conversion are refused.
  OutBuffers ob(1, 1, 512);
  EXPECT_FALSE(act_out_supports(ob.out, 1056));
  EXPECT_THROW(swiglu_act(nullptr, nullptr, 1, 1056, nullptr, ob.out, nullptr), InvalidArgument);
  EXPECT_FALSE(act_out_supports(ActOut{}, 256));
}

TEST(GpuOps, GetRowsEveryType) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kRows = 9, kK = 512;
  const auto w = random_floats(kRows * kK, rng);
  const std::vector<int32_t> ids = {8, 0, 3, 3};
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K,
                       TensorType::Q6_K, TensorType::Q5_K, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q4_1,
                       TensorType::Q3_K, TensorType::Q2_K}) {
    SCOPED_TRACE(tensor_type_name(t));
    const std::vector<uint8_t> bytes = test::quantize_rows(t, w, kRows, kK);
    const uint64_t rb = tensor_row_bytes(t, kK);
    const quant::TypeTraits& tr = quant::type_traits(t);
    std::vector<float> ref(ids.size() * kK);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (t == TensorType::F32) {
        std::memcpy(ref.data() + i * kK, w.data() + ids[i] * kK, kK * sizeof(float));
      } else {
        tr.to_float_ref(bytes.data() + ids[i] * rb, ref.data() + i * kK, kK);
      }
    }
    DeviceBuffer buf;
    const GpuMatrix g = upload_matrix(t, kRows, kK, bytes.data(), buf, "table");
    DeviceBuffer idd = to_device(ids), xd = test::poisoned(ref.size());
    get_rows(g, idd.as<int32_t>(), static_cast<int64_t>(ids.size()), xd.as<float>(), nullptr);
    expect_near_all(to_host<float>(xd, ref.size()), ref, 1e-7);
  }
}

// Attention of several tokens (prefill, causal) and one token (decode) over
// a cache with grouped heads, against cpu::attention_ref.
// kernel: the exact one (attention.cu), the prefill one (attention_tiled.cu)
// or the decode one (attention_decode.cu). ranges: each token reads a random
// range of the cells (several sequences in one cache) with its mask row
// covering just the range; else the causal mask over [0, n_kv).
// Split: tokens in runs sharing a range, divided by plan_attention between
// the tiled and decode kernels (attention() outside exact mode).
enum class Kernel { Exact, Tiled, Decode, Split };
// q8_splits > 0 (decode kernel): the kernel also writes the output's Q8_0
// blocks, split over the cells into q8_splits chunks (1: no split).
// max_alibi_bias > 0: ALiBi, the visible cells' mask holding the distance to the token.
void check_attention(int64_t n_tokens, int64_t n_kv, int64_t head_dim, float softcap, std::mt19937& rng,
                     Kernel kernel = Kernel::Exact, bool ranges = false, int64_t q8_splits = 0,
                     float max_alibi_bias = 0.0f, int64_t heads = 8, bool sinks = false) {
  const int64_t kHeads = heads, kHeadsKv = 2;
  // Attention sinks (gpt-oss): one logit per head around the scores' range.
  const auto sink_logits = random_floats(kHeads, rng, -3.0f, 3.0f);
  const int64_t kv_w = kHeadsKv * head_dim;
  const auto q = random_floats(n_tokens * kHeads * head_dim, rng, -2.0f, 2.0f);
  const auto kf = random_floats(n_kv * kv_w, rng, -2.0f, 2.0f), vf = random_floats(n_kv * kv_w, rng);
  std::vector<uint16_t> k(kf.size()), v(vf.size()), vt(vf.size());
  for (size_t i = 0; i < kf.size(); ++i) k[i] = fp32_to_fp16(kf[i]);
  for (int64_t j = 0; j < n_kv; ++j) {
    for (int64_t d = 0; d < kv_w; ++d) {
      v[j * kv_w + d] = fp32_to_fp16(vf[j * kv_w + d]);
      vt[d * n_kv + j] = v[j * kv_w + d];
    }
  }
  // Token t sees cells [0, n_kv - n_tokens + t]; the rest is hidden. With
  // ranges: token t reads [begin[t], begin[t] + len[t]) and sees a random
  // three quarters of it (some rows see nothing).
  std::vector<float> mask(n_tokens * n_kv, -std::numeric_limits<float>::infinity());
  std::vector<int32_t> begin(static_cast<size_t>(n_tokens), 0), len(static_cast<size_t>(n_tokens), 0);
  std::uniform_int_distribution<int64_t> run_length(1, 40);
  int64_t run_left = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    if (ranges) {
      std::uniform_int_distribution<int64_t> pick(0, n_kv);
      int64_t b = pick(rng), e = pick(rng);
      if (b > e) std::swap(b, e);
      if (kernel == Kernel::Split && run_left-- > 0) {  // the run's range
        b = begin[static_cast<size_t>(t - 1)];
        e = b + len[static_cast<size_t>(t - 1)];
      } else if (kernel == Kernel::Split) {
        run_left = run_length(rng) - 1;
      }
      begin[static_cast<size_t>(t)] = static_cast<int32_t>(b);
      len[static_cast<size_t>(t)] = static_cast<int32_t>(e - b);
      std::bernoulli_distribution visible(0.75);
      const float dist = max_alibi_bias > 0.0f ? -static_cast<float>((e - b) / 2) : 0.0f;
      for (int64_t j = 0; j < e - b; ++j) {
        mask[t * n_kv + j] = visible(rng) ? (max_alibi_bias > 0.0f ? dist + static_cast<float>(j % 7) : 0.0f)
                                          : mask[t * n_kv + j];
      }
    } else {
      for (int64_t j = 0; j <= n_kv - n_tokens + t; ++j) {
        mask[t * n_kv + j] = max_alibi_bias > 0.0f ? -static_cast<float>(n_kv - n_tokens + t - j) : 0.0f;
      }
    }
  }
  std::vector<float> ref(q.size());
  cpu::AttentionArgs a;
  a.q = q.data();
  a.k = k.data();
  a.vt = vt.data();
  a.vt_stride = n_kv;
  a.kv_stride = kv_w;
  a.n_kv = n_kv;
  a.mask = mask.data();
  if (ranges) {
    a.kv_begin = begin.data();
    a.kv_len = len.data();
    a.mask_stride = n_kv;
  }
  a.n_tokens = n_tokens;
  a.n_head = kHeads;
  a.n_head_kv = kHeadsKv;
  a.head_dim = head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  a.softcap = softcap;
  a.max_alibi_bias = max_alibi_bias;
  a.sinks = sinks ? sink_logits.data() : nullptr;
  a.out = ref.data();
  cpu::attention_ref(a);

  DeviceBuffer qd = to_device(q), kd = to_device(k), vd = to_device(v), md = to_device(mask),
               od = test::poisoned(q.size()), bd = to_device(begin), ld = to_device(len),
               sd = to_device(sink_logits);
  AttentionParams p;
  if (ranges) {
    p.kv_begin = bd.as<int32_t>();
    p.kv_len = ld.as<int32_t>();
    p.mask_stride = n_kv;
    p.max_len = *std::max_element(len.begin(), len.end());
  }
  p.q = qd.as<float>();
  p.k = kd.as<uint16_t>();
  p.v = vd.as<uint16_t>();
  p.mask = md.as<float>();
  p.n_kv = n_kv;
  p.n_tokens = n_tokens;
  p.n_head = kHeads;
  p.n_head_kv = kHeadsKv;
  p.head_dim = head_dim;
  p.scale = a.scale;
  p.softcap = softcap;
  p.max_alibi_bias = max_alibi_bias;
  p.sinks = sinks ? sd.as<float>() : nullptr;
  p.out = od.as<float>();
  if (kernel == Kernel::Tiled) {
    ASSERT_TRUE(attention_tiled_supports(p));
    attention_tiled(p, nullptr);
  } else if (kernel == Kernel::Decode) {
    ASSERT_TRUE(attention_decode_supports(p));
    if (q8_splits > 0) {
      OutBuffers ob(0, n_tokens, kHeads * head_dim);
      const int64_t floats = attention_decode_scratch_floats(n_tokens, kHeads, head_dim, q8_splits);
      DeviceBuffer scratch(static_cast<size_t>(std::max<int64_t>(floats, 1)) * sizeof(float));
      p.out_q8 = ob.out.quant;
      p.n_split = q8_splits;
      p.split_scratch = q8_splits > 1 ? scratch.as<float>() : nullptr;
      attention_decode(p, nullptr);
      expect_conversion(ob.out, od, n_tokens, kHeads * head_dim);
    } else {
      attention_decode(p, nullptr);
    }
  } else if (kernel == Kernel::Split) {
    const AttentionPlan plan = plan_attention(ranges ? begin.data() : nullptr, ranges ? len.data() : nullptr, n_tokens);
    // Every token in exactly one part.
    std::vector<int> seen(static_cast<size_t>(n_tokens), 0);
    for (size_t i = 0; i < plan.q_tiles.size(); i += 2) {
      ASSERT_LE(plan.q_tiles[i + 1], kAttentionQTile);
      for (int32_t j = 0; j < plan.q_tiles[i + 1]; ++j) ++seen[static_cast<size_t>(plan.q_tiles[i] + j)];
    }
    for (int32_t t : plan.decode_tokens) ++seen[static_cast<size_t>(t)];
    for (int64_t t = 0; t < n_tokens; ++t) ASSERT_EQ(seen[static_cast<size_t>(t)], 1) << "token " << t;
    std::vector<int32_t> tiles = plan.q_tiles, listed = plan.decode_tokens;
    tiles.push_back(0);  // never empty device buffers
    listed.push_back(0);
    DeviceBuffer td = to_device(tiles), dd = to_device(listed);
    p.q_tiles = td.as<int32_t>();
    p.n_q_tiles = static_cast<int64_t>(plan.q_tiles.size() / 2);
    p.decode_tokens = dd.as<int32_t>();
    p.n_decode_tokens = static_cast<int64_t>(plan.decode_tokens.size());
    const test::ProductMode fast(false);
    attention(p, nullptr);
    FERRITE_CUDA_CHECK(cudaDeviceSynchronize());
  } else {
    const test::ProductMode exact(true);
    attention(p, nullptr);
  }
  // f16 probabilities (the tiled kernel keeps them in f32) may round differently after a last-bit difference in
  // the softmax (an f16 ulp is 5e-4 relative).
  expect_near_all(to_host<float>(od, q.size()), ref, 2e-3);
}

TEST(GpuAttention, PrefillAndDecode) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  check_attention(13, 64, 64, 0.0f, rng);
  check_attention(1, 301, 128, 0.0f, rng);
  check_attention(4, 1000, 256, 0.0f, rng);
  check_attention(3, 50, 32, 30.0f, rng);
}

// The tiled prefill kernel: block edges (tokens and cells not multiples of
// the 32-wide tiles), a cache longer than the batch, both head sizes,
// soft-capping; the CPU's f16 probabilities bound the difference.
TEST(GpuAttention, TiledPrefill) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  check_attention(40, 40, 64, 0.0f, rng, Kernel::Tiled);
  check_attention(70, 100, 128, 0.0f, rng, Kernel::Tiled);
  check_attention(33, 1000, 128, 0.0f, rng, Kernel::Tiled);
  check_attention(20, 50, 64, 30.0f, rng, Kernel::Tiled);
  check_attention(1, 37, 128, 0.0f, rng, Kernel::Tiled);
}

// Several sequences in one cache: every kernel reads each token's range of
// cells only (cells outside it hold values the token must not see).
TEST(GpuAttention, PerTokenRanges) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  for (Kernel k : {Kernel::Exact, Kernel::Tiled, Kernel::Decode, Kernel::Split}) {
    check_attention(37, 300, 128, 0.0f, rng, k, true);
    check_attention(5, 90, 64, 30.0f, rng, k, true);
  }
  // Prompt chunks and single tokens of many sequences in one pass.
  for (int i = 0; i < 4; ++i) check_attention(150, 700, 128, 0.0f, rng, Kernel::Split, true);
  check_attention(100, 200, 64, 0.0f, rng, Kernel::Split, false);  // no ranges: one run
}

// ALiBi (the CPU twin: cpu::attention_ref with max_alibi_bias): every kernel
// adds each head's slope times the distance mask; 12 heads take both slope
// series (cpu/attention/alibi.h), 8 the power-of-two one.
TEST(GpuAttention, Alibi) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  for (Kernel k : {Kernel::Exact, Kernel::Tiled, Kernel::Decode, Kernel::Split}) {
    for (int64_t heads : {8, 12}) {
      const int64_t n_tokens = k == Kernel::Decode ? 3 : 37;
      check_attention(n_tokens, 300, 128, 0.0f, rng, k, false, 0, 8.0f, heads);
      check_attention(n_tokens, 90, 64, 30.0f, rng, k, k == Kernel::Split, 0, 8.0f, heads);
    }
  }
}

// Attention sinks (the CPU twin: cpu::attention_ref with sinks): every
// kernel adds each head's sink to the softmax's maximum and denominator;
// with per-token ranges some rows see no cell (their output: zeros), and the
// decode kernel with its split over the cells merges the sink once.
TEST(GpuAttention, Sinks) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  for (Kernel k : {Kernel::Exact, Kernel::Tiled, Kernel::Decode, Kernel::Split}) {
    const int64_t n_tokens = k == Kernel::Decode ? 3 : 37;
    check_attention(n_tokens, 300, 64, 0.0f, rng, k, false, 0, 0.0f, 8, true);
    check_attention(n_tokens, 90, 128, 0.0f, rng, k, true, 0, 0.0f, 8, true);
  }
  check_attention(1, 4099, 64, 0.0f, rng, Kernel::Decode, false, 4, 0.0f, 8, true);
}

// The decode kernel: one token or a few, cell counts around its warp and
// unroll steps, both head sizes, soft-capping, a long cache.
TEST(GpuAttention, Decode) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  check_attention(1, 1, 128, 0.0f, rng, Kernel::Decode);
  check_attention(1, 17, 64, 0.0f, rng, Kernel::Decode);
  check_attention(1, 301, 128, 0.0f, rng, Kernel::Decode);
  check_attention(3, 50, 64, 30.0f, rng, Kernel::Decode);
  check_attention(8, 4099, 128, 0.0f, rng, Kernel::Decode);
}

// The decode kernel writing its output's Q8_0 blocks too (one-token decode
// outside the exact mode): the blocks are those of quantize_act, with and
// without the split over the cells (the merge kernel writes them then).
TEST(GpuAttention, DecodeWithConversion) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  for (int64_t splits : {int64_t{1}, int64_t{3}}) {
    check_attention(1, 301, 128, 0.0f, rng, Kernel::Decode, false, splits);
    check_attention(1, 77, 64, 0.0f, rng, Kernel::Decode, false, splits);
    check_attention(3, 50, 64, 30.0f, rng, Kernel::Decode, true, splits);
    check_attention(2, 1000, 128, 0.0f, rng, Kernel::Decode, true, splits);
  }
}

}  // namespace
}  // namespace ferrite::cuda
