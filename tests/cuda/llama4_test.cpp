// llama4 on the GPU: its two kernels (cuda/kernels/llama4_ops.h) against
// their CPU twins (cpu/attention/attn_temperature.h) on random inputs, and the tiny
// llama4 (tests/model/tiny_llama4.h: chunked RoPE layers with the q/k norm,
// a NoPE layer with the attention temperature, dense and expert layers with
// the weighted expert inputs and the shared expert) against the
// double-precision reference (tests/model/ref_llama4.h): every layer on the
// GPU and the first on the CPU, the prompt in one batch, in passes of 7 and
// one token a pass (decode), in the exact and the fast arithmetic.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/attention/attn_temperature.h"
#include "cuda/kernels/llama4_ops.h"
#include "device_util.h"
#include "model/model.h"
#include "model/ref_llama4.h"
#include "model_util.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

constexpr double kExactTol = 1e-3;  // tests/model/llama4_test.cpp's bound
constexpr double kFastTol = 2e-2;   // ref_archs_test.cpp's fast bound

TEST(GpuLlama4Ops, TemperatureMatchesCpu) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = cuda::test::fresh_rng();
  constexpr int64_t kN = 67, kWidth = 200;
  std::vector<float> q = cuda::test::random_floats(static_cast<size_t>(kN * kWidth), rng, -4.0f, 4.0f);
  std::vector<int32_t> pos(static_cast<size_t>(kN));
  std::uniform_int_distribution<int32_t> any_pos(0, 1 << 20);
  for (int64_t t = 0; t < kN; ++t) pos[static_cast<size_t>(t)] = t < 20 ? static_cast<int32_t>(t) : any_pos(rng);
  for (float floor_scale : {4.0f, 8192.0f}) {
    std::vector<float> want = q;
    cpu::attn_temperature_scale(want.data(), pos.data(), kN, kWidth, floor_scale, 0.1f);
    cuda::DeviceBuffer qd = cuda::test::to_device(q);
    cuda::DeviceBuffer pd = cuda::test::to_device(pos);
    cuda::attn_temperature_scale(qd.as<float>(), pd.as<int32_t>(), kN, kWidth, floor_scale, 0.1f, nullptr);
    const std::vector<float> got = cuda::test::to_host<float>(qd, want.size());
    // The device's logf may differ from libm's by an ulp: the factor, then each product, within 2 ulps.
    int scaled = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 2.5e-7 * std::fabs(want[i])) << "element " << i << ", floor " << floor_scale;
      scaled += want[i] != q[i];
    }
    EXPECT_GT(scaled, static_cast<int>(want.size() / 4));  // the temperature is not 1 everywhere
  }
}

TEST(GpuLlama4Ops, WeightInputsMatchCpu) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = cuda::test::fresh_rng();
  constexpr int64_t kSlots = 37, kN = 300;
  const std::vector<float> in = cuda::test::random_floats(static_cast<size_t>(kSlots * kN), rng);
  std::vector<float> w = cuda::test::random_floats(static_cast<size_t>(kSlots), rng, 0.0f, 1.0f);
  std::vector<int32_t> row(static_cast<size_t>(kSlots));
  std::iota(row.begin(), row.end(), 0);
  std::shuffle(row.begin(), row.end(), rng);
  std::vector<float> want = in, want_w = w;
  cpu::moe_weight_inputs(want.data(), row.data(), want_w.data(), kSlots, kN);
  cuda::DeviceBuffer ind = cuda::test::to_device(in);
  cuda::DeviceBuffer wd = cuda::test::to_device(w);
  cuda::DeviceBuffer rd = cuda::test::to_device(row);
  cuda::moe_weight_inputs(ind.as<float>(), rd.as<int32_t>(), wd.as<float>(), kSlots, kN, nullptr);
  const std::vector<float> got = cuda::test::to_host<float>(ind, want.size());
  const std::vector<float> got_w = cuda::test::to_host<float>(wd, want_w.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
  EXPECT_EQ(got_w, std::vector<float>(static_cast<size_t>(kSlots), 1.0f));
  EXPECT_NE(want, in);
}

TEST(GpuRefArchs, Llama4) {
  FERRITE_REQUIRE_GPU();
  for (int64_t k_used : {int64_t{1}, int64_t{2}}) {
    test::Llama4Config c;
    c.n_expert_used = k_used;
    const auto tiny = test::make_tiny_llama4(c);
    const std::vector<int32_t> tokens = test::tiny_llama4_prompt();
    const test::ref::Rows want = test::RefLlama4(c, *tiny).logits(tokens);
    auto model = model::Model::load(tiny->path().string());
    const int64_t n = static_cast<int64_t>(tokens.size());
    const std::vector<cuda::test::Pass> passes = {{n, runtime::kAllLayers, true},  {7, runtime::kAllLayers, true},
                                                  {1, runtime::kAllLayers, true},  {n, runtime::kAllLayers, false},
                                                  {1, runtime::kAllLayers, false}, {n, 3, true}};
    cuda::test::check_passes(model, tokens, 64, passes, "llama4 top-" + std::to_string(k_used), kExactTol, kFastTol,
                             cuda::test::against_reference(want));
  }
}

}  // namespace
}  // namespace ferrite
