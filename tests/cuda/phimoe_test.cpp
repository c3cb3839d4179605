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
      cuda::test::check_passes(model, tokens, kCtx, cuda::test::standard_passes(static_cast<int64_t>(tokens.size())),
                               "jitter " + std::to_string(ref.jitter) + ", p" + std::to_string(prompt), kExactTol,
                               kFastTol, cuda::test::against_reference(expected));
    }
  }
}

}  // namespace
}  // namespace ferrite
