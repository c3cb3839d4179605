// phimoe on the GPU against the double-precision reference of transformers'
// definition (tests/model/ref_phimoe.h; the CPU: tests/model/phimoe_test.cpp):
// LayerNorms, the sparsemixer router (cuda::moe_route), the sliding window,
// every layer on the GPU and only the last one, the prompt in one pass and
// one token a pass (decode kernels, graphs), in the exact arithmetic with
// the CPU test's bound (1e-3) and in the fast one with the F32 goldens' fast
// bound (2e-2); and with phimoe.router_jitter_noise 0.5 (more experts kept
// beside the best).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "device_util.h"
#include "model/model.h"
#include "model/ref_phimoe.h"
#include "model_util.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

constexpr double kExactTol = 1e-3;
constexpr double kFastTol = 2e-2;
constexpr int64_t kCtx = 64;

TEST(GpuRefPhimoe, LogitsMatchReference) {
  FERRITE_REQUIRE_GPU();
  for (float jitter : {0.0f, 0.5f}) {  // 0: no key (0.01)
    const auto tiny = test::make_tiny_family("phimoe", true, jitter);
    test::RefPhimoe ref(*tiny);
    if (jitter > 0.0f) ref.jitter = jitter;
    std::shared_ptr<const model::Model> model = model::Model::load(tiny->path().string());
    for (int prompt : {1, 2}) {
      const std::vector<int32_t> tokens = test::tiny_family_prompt(prompt);
      const test::ref::Rows expected = ref.logits(tokens);
      const int64_t n = static_cast<int64_t>(tokens.size());
      struct Pass {
        int64_t n_batch;
        int n_gpu_layers;
        bool exact;
      };
      const Pass passes[] = {{n, runtime::kAllLayers, true}, {1, runtime::kAllLayers, true},
                             {n, runtime::kAllLayers, false}, {1, runtime::kAllLayers, false},
                             {n, 1, true},                    {1, 1, false}};
      for (const Pass& p : passes) {
        const cuda::test::ProductMode mode(p.exact);
        const std::vector<float> got = cuda::test::eval_logits(model, tokens, kCtx, p.n_batch, p.n_gpu_layers);
        ASSERT_EQ(got.size(), expected.size());
        double worst = 0;
        for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - expected[i]));
        const std::string what = "jitter " + std::to_string(ref.jitter) + ", p" + std::to_string(prompt) +
                                 ", batch " + std::to_string(p.n_batch) + ", -ngl " +
                                 (p.n_gpu_layers < 0 ? "all" : std::to_string(p.n_gpu_layers)) +
                                 (p.exact ? ", exact" : ", fast");
        EXPECT_LE(worst, p.exact ? kExactTol : kFastTol) << what;
        std::printf("  %s: max |logit error| %.3g\n", what.c_str(), worst);
      }
    }
  }
}

}  // namespace
}  // namespace ferrite
