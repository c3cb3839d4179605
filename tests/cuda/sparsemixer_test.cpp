// The sparsemixer router on the GPU (cuda::moe_route with
// MoeRouteOptions::sparsemixer) against its CPU twin cpu::sparsemixer_route
// on fresh random logits (expert counts up to kMoeMaxExperts, 1 to 8 rounds,
// several jitters, some logits on a coarse grid: exact ties and gaps on the
// threshold, which both decide in the same float arithmetic). The ids must
// be the CPU's; the weights within 1e-6 relative (exp and the sum in double
// on both, summed in another order); the selection bias and scale apply as
// for the other routers, renorm does not.
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/ops/sparsemixer.h"
#include "cuda/kernels/moe_ops.h"
#include "device_util.h"

namespace ferrite {
namespace {

using cuda::test::to_device;
using cuda::test::to_host;

TEST(MoeRouteSparsemixer, MatchesCpuTwin) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = cuda::test::fresh_rng();
  const int64_t n = 41;
  const std::pair<int64_t, int64_t> shapes[] = {{4, 2}, {16, 2}, {7, 7}, {60, 4}, {128, 8}, {256, 8}};
  for (const auto& [n_expert, k] : shapes) {
    for (float jitter : {0.01f, 0.25f, 1.0f}) {
      for (bool grid : {false, true}) {
        std::vector<float> logits = cuda::test::random_floats(static_cast<size_t>(n * n_expert), rng, -3.0f, 3.0f);
        if (grid) {
          for (float& v : logits) v = std::round(v * 8.0f) / 8.0f;
        }
        // Token 0: NaN and -inf among the logits.
        logits[0] = std::numeric_limits<float>::quiet_NaN();
        logits[1] = -INFINITY;
        cuda::DeviceBuffer d_logits = to_device(logits);
        cuda::DeviceBuffer d_ids(static_cast<size_t>(n * k) * sizeof(int32_t)), d_w = cuda::test::poisoned(n * k);
        cuda::MoeRouteOptions opt;
        opt.sparsemixer = true;
        opt.jitter = jitter;
        opt.scale = 1.5f;
        cuda::moe_route(d_logits.as<float>(), n, n_expert, k, /*renorm=*/true, d_ids.as<int32_t>(), d_w.as<float>(),
                        nullptr, opt);
        const std::vector<int32_t> ids = to_host<int32_t>(d_ids, static_cast<size_t>(n * k));
        const std::vector<float> w = to_host<float>(d_w, static_cast<size_t>(n * k));
        std::vector<int32_t> ref_ids(static_cast<size_t>(k));
        std::vector<float> ref_w(static_cast<size_t>(k));
        for (int64_t t = 0; t < n; ++t) {
          cpu::sparsemixer_route(logits.data() + t * n_expert, n_expert, k, jitter, ref_ids.data(), ref_w.data());
          for (int64_t j = 0; j < k; ++j) {
            const size_t i = static_cast<size_t>(t * k + j);
            ASSERT_EQ(ids[i], ref_ids[j]) << n_expert << " experts, jitter " << jitter << ", token " << t << ", round "
                                          << j;
            EXPECT_NEAR(w[i], 1.5f * ref_w[j], 1e-6f * 1.5f * ref_w[j])
                << n_expert << " experts, jitter " << jitter << ", token " << t << ", round " << j;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ferrite
