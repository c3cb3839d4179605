// The kernels multi-head latent attention adds on the GPU against their CPU
// twins, on fresh random inputs: the per-head product (heads_product.cu vs
// cpu/attention/heads_product.cpp) with F32 and F16 weights over strided views, and
// DeepSeek-V3's router options of moe_route (sigmoid gating, a selection
// bias that ranks without weighting, renormalisation and scale) against the
// CPU backend's rule (cpu_ffn.cpp moe) written out here.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/attention/heads_product.h"
#include "cpu/thread_pool.h"
#include "cuda/kernels/heads_product.h"
#include "cuda/kernels/moe_ops.h"
#include "device_util.h"

namespace ferrite {
namespace {

using cuda::test::to_device;
using cuda::test::to_host;

TEST(HeadsProduct, MatchesCpuTwin) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = cuda::test::fresh_rng();
  cpu::ThreadPool pool(2);
  struct Shape {
    int64_t n, n_head, n_in, n_out, pad;
  };
  for (const Shape& sh : {Shape{1, 4, 16, 32, 16}, Shape{7, 3, 128, 512, 64}, Shape{33, 2, 40, 24, 8}}) {
    for (TensorType type : {TensorType::F32, TensorType::F16}) {
      const int64_t in_head = sh.n_in + sh.pad, out_head = sh.n_out + sh.pad;
      const std::vector<float> in = cuda::test::random_floats(static_cast<size_t>(sh.n * sh.n_head * in_head), rng);
      const std::vector<float> wf =
          cuda::test::random_floats(static_cast<size_t>(sh.n_head * sh.n_out * sh.n_in), rng);
      std::vector<uint16_t> wh(wf.size());
      for (size_t i = 0; i < wf.size(); ++i) wh[i] = fp32_to_fp16(wf[i]);
      cpu::HeadsProduct p;
      p.in_row = sh.n_head * in_head;
      p.in_head = in_head;
      p.w_type = type;
      p.n = sh.n;
      p.n_head = sh.n_head;
      p.n_in = sh.n_in;
      p.n_out = sh.n_out;
      p.out_row = sh.n_head * out_head;
      p.out_head = out_head;
      const size_t n_out_all = static_cast<size_t>(sh.n * sh.n_head * out_head);
      std::vector<float> ref(n_out_all, 0.0f);
      p.in = in.data() + 1;  // an offset view, as the latent part of a row
      p.w = type == TensorType::F16 ? static_cast<const void*>(wh.data()) : wf.data();
      p.out = ref.data();
      cpu::heads_product(p, pool);

      cuda::DeviceBuffer d_in = to_device(in), d_out = to_device(std::vector<float>(n_out_all, 0.0f));
      cuda::DeviceBuffer d_w = type == TensorType::F16 ? to_device(wh) : to_device(wf);
      p.in = d_in.as<float>() + 1;
      p.w = d_w.as();
      p.out = d_out.as<float>();
      cuda::heads_product(p, nullptr);
      const std::vector<float> got = to_host<float>(d_out, n_out_all);
      double worst = 0;
      for (size_t i = 0; i < n_out_all; ++i) worst = std::max(worst, static_cast<double>(std::fabs(got[i] - ref[i])));
      // Sums of n_in products of values below 1 in two orders: f32 rounding.
      EXPECT_LE(worst, 1e-5 * std::sqrt(static_cast<double>(sh.n_in))) << "n_in " << sh.n_in << ", "
                                                                       << tensor_type_name(type);
    }
  }
}

TEST(MoeRoute, SigmoidBiasNormScale) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = cuda::test::fresh_rng();
  const int64_t n = 29, n_expert = 64, k = 6;
  const float scale = 2.5f;
  const std::vector<float> logits = cuda::test::random_floats(static_cast<size_t>(n * n_expert), rng, -4.0f, 4.0f);
  const std::vector<float> bias = cuda::test::random_floats(static_cast<size_t>(n_expert), rng, -0.5f, 0.5f);
  for (bool renorm : {true, false}) {
    cuda::DeviceBuffer d_logits = to_device(logits), d_bias = to_device(bias);
    cuda::DeviceBuffer d_ids(static_cast<size_t>(n * k) * sizeof(int32_t)), d_w = cuda::test::poisoned(n * k);
    cuda::MoeRouteOptions opt;
    opt.sigmoid = true;
    opt.bias = d_bias.as<float>();
    opt.scale = scale;
    cuda::moe_route(d_logits.as<float>(), n, n_expert, k, renorm, d_ids.as<int32_t>(), d_w.as<float>(), nullptr, opt);
    const std::vector<int32_t> ids = to_host<int32_t>(d_ids, static_cast<size_t>(n * k));
    const std::vector<float> w = to_host<float>(d_w, static_cast<size_t>(n * k));
    for (int64_t t = 0; t < n; ++t) {
      // The CPU backend's rule: p = sigmoid(logit), ranked by p + bias, weighted by p.
      std::vector<float> p(static_cast<size_t>(n_expert)), key(p.size());
      for (int64_t e = 0; e < n_expert; ++e) {
        p[e] = 1.0f / (1.0f + std::exp(-logits[t * n_expert + e]));
        key[e] = p[e] + bias[e];
      }
      std::vector<int32_t> order(static_cast<size_t>(n_expert));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return key[a] > key[b]; });
      float sum = 0.0f;
      for (int64_t j = 0; j < k; ++j) sum += p[order[j]];
      for (int64_t j = 0; j < k; ++j) {
        const size_t i = static_cast<size_t>(t * k + j);
        ASSERT_EQ(ids[i], order[j]) << "token " << t << ", slot " << j;
        const float want = p[order[j]] / (renorm ? sum : 1.0f) * scale;
        EXPECT_NEAR(w[i], want, 1e-5f * scale) << "token " << t << ", slot " << j;
      }
    }
  }
}

}  // namespace
}  // namespace ferrite
