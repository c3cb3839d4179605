// RWKV's kernels (cuda/kernels/rwkv.h) against their CPU twins (cpu/recurrent/rwkv.h)
// on fresh random inputs, two sequences' tokens interleaved in one batch for
// the token shift and the wkv recurrences; and the tiny rwkv6 and rwkv7
// models (tests/model/tiny_rwkv.h) with every layer on the GPU, and with
// the first layer on the CPU, against the CPU's logits (and rwkv6qwen2's).
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/recurrent/rwkv.h"
#include "cuda/kernels/rwkv.h"
#include "device_util.h"
#include "model/model.h"
#include "model/tiny_rwkv.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace ferrite::cuda {
namespace {

using test::random_floats;

constexpr int64_t kN = 9, kHs = 16, kHeads = 3, kE = kHs * kHeads;
const std::vector<int32_t> kSlot = {1, 0, 1, 1, 0, 1, 0, 0, 1};  // two sequences in slots 0 and 1

std::vector<float> host_of(const DeviceBuffer& d, size_t n) { return test::to_host<float>(d, n); }

TEST(GpuRwkv, ShiftAndWkvMatchTheCpuTwinsWithInterleavedSequences) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = test::fresh_rng();
  const size_t ne = static_cast<size_t>(kN * kE), sf = static_cast<size_t>(kE * kHs);
  auto h = random_floats(ne, rng), rows0 = random_floats(static_cast<size_t>(2 * 2 * kE), rng);
  auto r = random_floats(ne, rng), k = random_floats(ne, rng), v = random_floats(ne, rng);
  auto w = random_floats(ne, rng, 0.3f, 0.99f), u = random_floats(static_cast<size_t>(kE), rng);
  auto a = random_floats(ne, rng, -0.3f, 0.3f), b = random_floats(ne, rng, -0.3f, 0.3f);
  auto s0 = random_floats(2 * sf, rng);

  std::vector<float> rows = rows0, sx(ne), s6 = s0, s7 = s0, sg = s0, y6(ne), y7(ne), yg(ne);
  cpu::rwkv_shift(h.data(), kN, kE, kSlot.data(), rows.data() + kE, 2 * kE, sx.data());
  for (int64_t t = 0; t < kN; ++t) {
    const size_t o = static_cast<size_t>(t * kE), st = static_cast<size_t>(kSlot[t]) * sf;
    cpu::rwkv_wkv6_token(kHeads, kHs, s6.data() + st, &r[o], &k[o], &v[o], &w[o], u.data(), &y6[o]);
    cpu::rwkv_wkv7_token(kHeads, kHs, s7.data() + st, &r[o], &w[o], &k[o], &v[o], &a[o], &b[o], &y7[o]);
    cpu::rwkv_gla_token(kHeads, kHs, sg.data() + st, &r[o], &k[o], &v[o], &w[o], 0.25f, &yg[o]);
  }

  DeviceBuffer h_d = test::to_device(h), rows_d = test::to_device(rows0), slot_d = test::to_device(kSlot);
  DeviceBuffer r_d = test::to_device(r), k_d = test::to_device(k), v_d = test::to_device(v), w_d = test::to_device(w);
  DeviceBuffer u_d = test::to_device(u), a_d = test::to_device(a), b_d = test::to_device(b);
  DeviceBuffer s6_d = test::to_device(s0), s7_d = test::to_device(s0), sg_d = test::to_device(s0);
  DeviceBuffer sx_d = test::poisoned(ne), y6_d = test::poisoned(ne), y7_d = test::poisoned(ne);
  DeviceBuffer yg_d = test::poisoned(ne);
  rwkv_shift(h_d.as<float>(), kN, kE, slot_d.as<int32_t>(), rows_d.as<float>() + kE, 2 * kE, sx_d.as<float>(),
             nullptr);
  const WkvDims d{.n = kN, .n_head = kHeads, .hs = kHs, .scale = 0.25f};
  rwkv_wkv6(s6_d.as<float>(), slot_d.as<int32_t>(), r_d.as<float>(), k_d.as<float>(), v_d.as<float>(),
            w_d.as<float>(), u_d.as<float>(), d, y6_d.as<float>(), nullptr);
  rwkv_wkv7(s7_d.as<float>(), slot_d.as<int32_t>(), r_d.as<float>(), w_d.as<float>(), k_d.as<float>(),
            v_d.as<float>(), a_d.as<float>(), b_d.as<float>(), d, y7_d.as<float>(), nullptr);
  rwkv_wkv6(sg_d.as<float>(), slot_d.as<int32_t>(), r_d.as<float>(), k_d.as<float>(), v_d.as<float>(),
            w_d.as<float>(), nullptr, d, yg_d.as<float>(), nullptr);  // the gated linear attention
  EXPECT_LT(test::relative_error(host_of(yg_d, ne), yg), 1e-5);
  EXPECT_LT(test::relative_error(host_of(sg_d, sg.size()), sg), 1e-5);
  EXPECT_EQ(host_of(sx_d, ne), sx);
  EXPECT_EQ(host_of(rows_d, rows.size()), rows);
  EXPECT_LT(test::relative_error(host_of(y6_d, ne), y6), 1e-5);
  EXPECT_LT(test::relative_error(host_of(s6_d, s6.size()), s6), 1e-5);
  EXPECT_LT(test::relative_error(host_of(y7_d, ne), y7), 1e-5);
  EXPECT_LT(test::relative_error(host_of(s7_d, s7.size()), s7), 1e-5);
}

TEST(GpuRwkv, ElementwiseKernelsMatchTheCpuTwins) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = test::fresh_rng();
  const size_t ne = static_cast<size_t>(kN * kE);
  auto h = random_floats(ne, rng), sx = random_floats(ne, rng), m = random_floats(ne, rng);
  auto lerp = random_floats(static_cast<size_t>(kE), rng, 0.0f, 1.0f), x = random_floats(ne, rng, -3.0f, 3.0f);
  auto vecs = random_floats(static_cast<size_t>(5 * kE), rng), y0 = random_floats(ne, rng);
  auto dw = random_floats(ne, rng), aa = random_floats(ne, rng), k = random_floats(ne, rng);
  const cpu::Rwkv7Vectors pv{.w0 = &vecs[0], .a0 = &vecs[kE], .k_k = &vecs[2 * kE], .k_a = &vecs[3 * kE]};
  // CPU.
  std::vector<float> mix(ne), acts[4], dec = x, res = y0, pdw = dw, pa = aa, pk = k, kk(ne), bb(ne), bon = y0,
                                       gn = y0;
  cpu::rwkv_mix(h.data(), sx.data(), lerp.data(), m.data(), kN, kE, mix.data());
  for (int i = 0; i < 4; ++i) {
    acts[i] = x;
    cpu::rwkv_act(static_cast<RwkvAct>(i), acts[i].data(), static_cast<int64_t>(ne));
  }
  cpu::rwkv6_decay(dec.data(), lerp.data(), kN, kE);
  cpu::rwkv7_value_residual(res.data(), h.data(), m.data(), lerp.data(), kN, kE);
  cpu::rwkv7_prepare(pv, kN, kE, kHs, pdw.data(), pa.data(), pk.data(), kk.data(), bb.data());
  cpu::rwkv7_bonus(bon.data(), h.data(), sx.data(), m.data(), &vecs[4 * kE], kN, kE, kHs);
  cpu::rwkv_group_norm(gn.data(), kN, kE, kHs, 64e-5f, &vecs[0], &vecs[kE]);
  // GPU.
  DeviceBuffer h_d = test::to_device(h), sx_d = test::to_device(sx), m_d = test::to_device(m);
  DeviceBuffer lerp_d = test::to_device(lerp), vecs_d = test::to_device(vecs), mix_d = test::poisoned(ne);
  const float* vd = vecs_d.as<float>();
  rwkv_mix(h_d.as<float>(), sx_d.as<float>(), lerp_d.as<float>(), m_d.as<float>(), kN, kE, mix_d.as<float>(), nullptr);
  EXPECT_LT(test::relative_error(host_of(mix_d, ne), mix), 1e-6);
  for (int i = 0; i < 4; ++i) {
    DeviceBuffer x_d = test::to_device(x);
    rwkv_act(static_cast<RwkvAct>(i), x_d.as<float>(), static_cast<int64_t>(ne), nullptr);
    EXPECT_LT(test::relative_error(host_of(x_d, ne), acts[i]), 1e-6) << "act " << i;
  }
  DeviceBuffer dec_d = test::to_device(x), res_d = test::to_device(y0), bon_d = test::to_device(y0);
  DeviceBuffer gn_d = test::to_device(y0);
  rwkv6_decay(dec_d.as<float>(), lerp_d.as<float>(), kN, kE, nullptr);
  rwkv7_value_residual(res_d.as<float>(), h_d.as<float>(), m_d.as<float>(), lerp_d.as<float>(), kN, kE, nullptr);
  rwkv7_bonus(bon_d.as<float>(), h_d.as<float>(), sx_d.as<float>(), m_d.as<float>(), vd + 4 * kE, kN, kE, kHs,
              nullptr);
  rwkv_group_norm(gn_d.as<float>(), kN, kE, kHs, 64e-5f, vd, vd + kE, nullptr);
  EXPECT_LT(test::relative_error(host_of(dec_d, ne), dec), 1e-6);
  EXPECT_LT(test::relative_error(host_of(res_d, ne), res), 1e-6);
  EXPECT_LT(test::relative_error(host_of(bon_d, ne), bon), 1e-5);
  EXPECT_LT(test::relative_error(host_of(gn_d, ne), gn), 1e-5);
  DeviceBuffer dw_d = test::to_device(dw), a_d = test::to_device(aa), k_d = test::to_device(k);
  DeviceBuffer kk_d = test::poisoned(ne), b_d = test::poisoned(ne);
  rwkv7_prepare({.w0 = vd, .a0 = vd + kE, .k_k = vd + 2 * kE, .k_a = vd + 3 * kE}, kN, kE, kHs, dw_d.as<float>(),
                a_d.as<float>(), k_d.as<float>(), kk_d.as<float>(), b_d.as<float>(), nullptr);
  EXPECT_LT(test::relative_error(host_of(dw_d, ne), pdw), 1e-6);
  EXPECT_LT(test::relative_error(host_of(a_d, ne), pa), 1e-6);
  EXPECT_LT(test::relative_error(host_of(k_d, ne), pk), 1e-6);
  EXPECT_LT(test::relative_error(host_of(kk_d, ne), kk), 1e-5);
  EXPECT_LT(test::relative_error(host_of(b_d, ne), bb), 1e-5);
  // rwkv6qwen2's grouped heads (kHeads heads from one key/value head) and k (1 - w).
  std::vector<float> rep(ne), kd = k;
  cpu::rwkv_repeat_heads(h.data(), kN, 1, kHeads, kHs, rep.data());
  cpu::rwkv_key_decay(kd.data(), dw.data(), static_cast<int64_t>(ne));
  DeviceBuffer rep_d = test::poisoned(ne), kd_d = test::to_device(k), dw0_d = test::to_device(dw);
  rwkv_repeat_heads(h_d.as<float>(), kN, 1, kHeads, kHs, rep_d.as<float>(), nullptr);
  rwkv_key_decay(kd_d.as<float>(), dw0_d.as<float>(), static_cast<int64_t>(ne), nullptr);
  EXPECT_EQ(host_of(rep_d, ne), rep);
  EXPECT_LT(test::relative_error(host_of(kd_d, ne), kd), 1e-6);
}

std::vector<int32_t> tokens_of(int64_t n, int salt) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((5 * i * i + salt * i + salt) % 320);
  return t;
}

// Two sequences interleaved in one batch, then one token each.
std::vector<float> interleaved(const std::shared_ptr<const model::Model>& m, int n_gpu_layers) {
  runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2, .n_gpu_layers = n_gpu_layers, .n_seq_max = 2});
  const std::vector<int32_t> a = tokens_of(7, 3), b = tokens_of(5, 11);
  runtime::Batch batch;
  for (size_t i = 0; i < 6; ++i) {
    batch.add(a[i], static_cast<int32_t>(i), 0, true);
    if (i < 4) batch.add(b[i], static_cast<int32_t>(i), 1, true);
  }
  std::vector<float> out;
  ctx.decode(batch);
  for (int64_t r = 0; r < ctx.n_outputs(); ++r) out.insert(out.end(), ctx.logits(r).begin(), ctx.logits(r).end());
  batch.clear();
  batch.add(b[4], 4, 1, true);
  batch.add(a[6], 6, 0, true);
  ctx.decode(batch);
  for (int64_t r = 0; r < ctx.n_outputs(); ++r) out.insert(out.end(), ctx.logits(r).begin(), ctx.logits(r).end());
  return out;
}

TEST(GpuRwkv, ModelsMatchTheCpu) {
  FERRITE_REQUIRE_GPU();
  for (int version : {6, 7, 8}) {  // 8: rwkv6qwen2
    ferrite::test::RwkvConfig c;
    c.version = version == 7 ? 7 : 6;
    c.qwen2 = version == 8;
    const auto tiny = ferrite::test::make_tiny_rwkv(c);
    auto m = model::Model::load(tiny->path().string());
    const std::vector<float> cpu = interleaved(m, 0);
    const double all = test::relative_error(interleaved(m, runtime::kAllLayers), cpu);
    const double part = test::relative_error(interleaved(m, 2), cpu);  // layer 0 on the CPU
    EXPECT_LT(all, 2e-3) << m->hparams().arch;  // the GPU's f16 products
    EXPECT_LT(part, 2e-3) << m->hparams().arch;
    std::printf("  %s on the GPU against the CPU: relative error %.3g (all layers), %.3g (layer 0 on the CPU)\n",
                m->hparams().arch.c_str(), all, part);
  }
}

}  // namespace
}  // namespace ferrite::cuda
