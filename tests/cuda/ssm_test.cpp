// The Mamba-2 kernels (cuda/kernels/ssm.h) against their CPU twins
// (cpu/recurrent/ssm.h) on fresh random inputs, with two sequences' tokens interleaved
// in one batch (each kernel walks the tokens in order with the state of the
// token's slot); and the tiny mamba2 and granitehybrid models (tests/model
// ref_*.h) with every layer on the GPU against the CPU's logits, in one pass
// and token by token, two sequences interleaved.
#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/recurrent/ssm.h"
#include "cuda/kernels/ssm.h"
#include "device_util.h"
#include "model/model.h"
#include "model/ref_granite_hybrid.h"
#include "model/ref_mamba2.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace ferrite::cuda {
namespace {

TEST(GpuSsm, KernelsMatchTheCpuTwinsWithInterleavedSequences) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = test::fresh_rng();
  const int64_t n = 9, d_conv = 4, n_head = 8, head_dim = 8, d_state = 16, n_group = 2;
  const int64_t d_inner = n_head * head_dim, ch = d_inner + 2 * n_group * d_state, cols = 2 * d_inner + 2 * n_group * d_state + n_head;
  const std::vector<int32_t> slot = {1, 0, 1, 1, 0, 1, 0, 0, 1};  // two sequences in slots 0 and 1
  const int64_t conv_f = (d_conv - 1) * ch, ssm_f = d_inner * d_state;
  auto zx = test::random_floats(static_cast<size_t>(n * cols), rng, -2.0f, 2.0f);
  auto w = test::random_floats(static_cast<size_t>(d_conv * ch), rng, -0.5f, 0.5f);
  auto b = test::random_floats(static_cast<size_t>(ch), rng, -0.2f, 0.2f);
  auto conv0 = test::random_floats(static_cast<size_t>(2 * conv_f), rng);
  auto ssm0 = test::random_floats(static_cast<size_t>(2 * ssm_f), rng);
  auto dtb = test::random_floats(static_cast<size_t>(n_head), rng, -1.0f, 0.5f);
  auto a = test::random_floats(static_cast<size_t>(n_head), rng, -3.0f, -0.1f);
  auto d = test::random_floats(static_cast<size_t>(n_head), rng, 0.5f, 1.5f);
  auto nw = test::random_floats(static_cast<size_t>(d_inner), rng, 0.8f, 1.2f);

  // The CPU twins, token by token.
  std::vector<float> conv = conv0, st = ssm0, xbc(static_cast<size_t>(n * ch)), y(static_cast<size_t>(n * d_inner));
  const cpu::SsmScanArgs args{.n_head = n_head, .head_dim = head_dim, .d_state = d_state, .n_group = n_group,
                              .dt_bias = dtb.data(), .a = a.data(), .d = d.data()};
  for (int64_t t = 0; t < n; ++t) {
    const float* row = zx.data() + t * cols;
    float* xt = xbc.data() + t * ch;
    cpu::ssm_conv_token(conv.data() + slot[t] * conv_f, row + d_inner, w.data(), b.data(), d_conv, ch, xt);
    float* yt = y.data() + t * d_inner;
    cpu::ssm_scan_token(args, st.data() + slot[t] * ssm_f, xt, row + d_inner + ch, xt + d_inner,
                        xt + d_inner + n_group * d_state, yt);
    cpu::ssm_gated_norm(yt, row, nw.data(), d_inner, n_group, 1e-5f);
  }

  DeviceBuffer zx_d = test::to_device(zx), w_d = test::to_device(w), b_d = test::to_device(b);
  DeviceBuffer conv_d = test::to_device(conv0), ssm_d = test::to_device(ssm0), slot_d = test::to_device(slot);
  DeviceBuffer dtb_d = test::to_device(dtb), a_d = test::to_device(a), d_d = test::to_device(d), nw_d = test::to_device(nw);
  DeviceBuffer xbc_d = test::poisoned(static_cast<size_t>(n * ch)), y_d = test::poisoned(static_cast<size_t>(n * d_inner));
  ssm_conv(conv_d.as<float>(), slot_d.as<int32_t>(), zx_d.as<float>() + d_inner, cols, w_d.as<float>(),
           b_d.as<float>(), n, d_conv, ch, xbc_d.as<float>(), nullptr);
  ssm_scan(ssm_d.as<float>(), slot_d.as<int32_t>(), xbc_d.as<float>(), ch, zx_d.as<float>() + d_inner + ch, cols,
           dtb_d.as<float>(), a_d.as<float>(), d_d.as<float>(), {n_head, head_dim, d_state, n_group}, n,
           y_d.as<float>(), nullptr);
  ssm_gated_norm(y_d.as<float>(), zx_d.as<float>(), cols, nw_d.as<float>(), n, d_inner, n_group, 1e-5f, nullptr);
  EXPECT_LT(test::relative_error(test::to_host<float>(xbc_d, xbc.size()), xbc), 1e-6);
  EXPECT_LT(test::relative_error(test::to_host<float>(y_d, y.size()), y), 1e-5);
  EXPECT_LT(test::relative_error(test::to_host<float>(conv_d, conv.size()), conv), 1e-6);
  EXPECT_LT(test::relative_error(test::to_host<float>(ssm_d, st.size()), st), 1e-5);
}

std::vector<int32_t> tokens_of(int64_t n, int64_t n_vocab, int salt) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((5 * i * i + salt * i + salt) % n_vocab);
  return t;
}

// Two sequences interleaved in one batch, then one token each, on the CPU and with every layer on the GPU.
std::vector<float> interleaved(const std::shared_ptr<const model::Model>& m, int n_gpu_layers) {
  runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2, .n_gpu_layers = n_gpu_layers, .n_seq_max = 2});
  const int64_t nv = m->hparams().n_vocab;
  const std::vector<int32_t> a = tokens_of(7, nv, 3), b = tokens_of(5, nv, 11);
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

TEST(GpuSsm, Mamba2ModelMatchesTheCpu) {
  FERRITE_REQUIRE_GPU();
  ferrite::test::TinyMamba2 tiny(ferrite::test::Mamba2Config{});
  auto m = model::Model::load(tiny.path().string());
  EXPECT_LT(test::relative_error(interleaved(m, runtime::kAllLayers), interleaved(m, 0)), 1e-4);
}

TEST(GpuSsm, GraniteHybridModelMatchesTheCpu) {
  FERRITE_REQUIRE_GPU();
  ferrite::test::TinyGraniteHybrid tiny(ferrite::test::GraniteHybridConfig{});
  auto m = model::Model::load(tiny.path().string());
  const std::vector<float> cpu = interleaved(m, 0);
  EXPECT_LT(test::relative_error(interleaved(m, runtime::kAllLayers), cpu), 2e-3);  // the GPU's f16 products
  EXPECT_LT(test::relative_error(interleaved(m, 2), cpu), 2e-3);                   // layer 0 on the CPU
}

}  // namespace
}  // namespace ferrite::cuda
