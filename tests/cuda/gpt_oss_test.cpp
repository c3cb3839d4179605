// gpt-oss's kernels on the GPU against their CPU twins on fresh random
// inputs: the clamped SwiGLU (cpu::swiglu_oai) and the router's softmax
// over the chosen logits (moe_route with softmax_weight; the CPU backend's
// MoeGating::SoftmaxWeight in cpu/backend/cpu_ffn.cpp). The attention sinks
// are GpuAttention.Sinks (ops_test.cpp), the whole model GpuRefArchs.GptOss
// (ref_archs_test.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/ops/activations.h"
#include "cuda/kernels/moe_ops.h"
#include "cuda/kernels/ops.h"
#include "device_util.h"

namespace ferrite::cuda {
namespace {

using test::fresh_rng;
using test::random_floats;
using test::to_device;
using test::to_host;

// Inputs on both sides of the clamp (7) on both inputs; the GPU's exp is the
// correctly rounded one, libm's expf within an ulp of it.
TEST(GpuGptOss, SwigluOaiIsTheCpus) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kN = 5000;
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  const auto gate = random_floats(kN, rng, -15.0f, 15.0f), up = random_floats(kN, rng, -15.0f, 15.0f);
  std::vector<float> want(kN);
  cpu::swiglu_oai(gate.data(), up.data(), kN, kAlpha, kLimit, want.data());
  DeviceBuffer gd = to_device(gate), ud = to_device(up);
  swiglu_oai(gd.as<float>(), ud.as<float>(), kN, kAlpha, kLimit, ud.as<float>(), nullptr);  // y aliases up
  const std::vector<float> got = to_host<float>(ud, kN);
  for (int64_t i = 0; i < kN; ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-6f * std::max(1.0f, std::fabs(want[i]))) << "element " << i;
  }
}

// Top-k by logit (ties: the lower id), weights the softmax of the k chosen
// logits, for k of 1, 2, 4 and 20 (groups of 16 and a tail in the softmax).
TEST(GpuGptOss, RouteSoftmaxOverChosenLogits) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  for (int64_t k : {1, 2, 4, 20}) {
    const int64_t n = 37, n_expert = 32;
    auto logits = random_floats(static_cast<size_t>(n * n_expert), rng, -4.0f, 4.0f);
    for (float& v : logits) v = std::round(v * 64.0f) / 64.0f;  // some exact ties
    DeviceBuffer ld = to_device(logits), idd(static_cast<size_t>(n * k) * sizeof(int32_t)),
                 wd(static_cast<size_t>(n * k) * sizeof(float));
    MoeRouteOptions opt;
    opt.softmax_weight = true;
    moe_route(ld.as<float>(), n, n_expert, k, /*renorm=*/false, idd.as<int32_t>(), wd.as<float>(), nullptr, opt);
    const auto ids = to_host<int32_t>(idd, static_cast<size_t>(n * k));
    const auto w = to_host<float>(wd, static_cast<size_t>(n * k));
    for (int64_t t = 0; t < n; ++t) {
      const float* row = logits.data() + t * n_expert;
      std::vector<int32_t> order(static_cast<size_t>(n_expert));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [row](int32_t a, int32_t b) { return row[a] > row[b]; });
      std::vector<float> want(static_cast<size_t>(k));
      for (int64_t j = 0; j < k; ++j) want[j] = row[order[j]];
      cpu::softmax_inplace(want.data(), k);
      for (int64_t j = 0; j < k; ++j) {
        EXPECT_EQ(ids[t * k + j], order[j]) << "token " << t << " slot " << j << " of " << k;
        EXPECT_NEAR(w[t * k + j], want[j], 1e-6f) << "token " << t << " slot " << j << " of " << k;
      }
    }
  }
}

}  // namespace
}  // namespace ferrite::cuda
