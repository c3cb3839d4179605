// The tiny models of issue 27's families (tests/model/tiny_families.h)
// against llama.cpp's goldens (tests/model/golden/) on the GPU: every layer
// on the GPU and only the last one, the prompt in one pass (prefill kernels)
// and one token a pass (decode kernels, graphs), in the exact arithmetic with
// the CPU test's bound and in the fast one with the F32 goldens' fast bound
// (tests/cuda/golden_test.cpp).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "device_util.h"
#include "model/golden.h"
#include "model/model.h"
#include "model/tiny_families.h"
#include "model_util.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

constexpr double kExactTol = 1e-3;
constexpr double kDeepExactTol = 3e-3;  // 8 layers and more (baichuan's 32): the CPU test's bound
constexpr double kFastTol = 2e-2;
constexpr int64_t kCtx = 64;

struct Case {
  std::string family;
  int prompt;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.family << " p" << c.prompt; }

class GpuGoldenFamilies : public ::testing::TestWithParam<Case> {};

TEST_P(GpuGoldenFamilies, TopLogitsAndLogSumExp) {
  FERRITE_REQUIRE_GPU();
  const Case& c = GetParam();
  const test::Golden g = test::load_golden(std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden" /
                                           (c.family + ".p" + std::to_string(c.prompt) + ".json"));
  const auto tiny = test::make_tiny_family(c.family);
  auto model = model::Model::load(tiny->path().string());
  const size_t nv = static_cast<size_t>(model->hparams().n_vocab);
  const int64_t n = static_cast<int64_t>(g.tokens.size());
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
    const std::vector<float> logits = cuda::test::eval_logits(model, g.tokens, kCtx, p.n_batch, p.n_gpu_layers);
    ASSERT_EQ(logits.size(), g.positions.size() * nv);
    double worst = 0;
    for (size_t i = 0; i < g.positions.size(); ++i) {
      worst = std::max(worst,
                       test::max_logit_error(std::span<const float>(logits.data() + i * nv, nv), g.positions[i]));
    }
    const std::string what = c.family + " p" + std::to_string(c.prompt) + ", batch " + std::to_string(p.n_batch) +
                             ", -ngl " + (p.n_gpu_layers < 0 ? "all" : std::to_string(p.n_gpu_layers)) +
                             (p.exact ? ", exact" : ", fast");
    const double exact_tol = model->hparams().n_layer >= 8 ? kDeepExactTol : kExactTol;
    EXPECT_LE(worst, p.exact ? exact_tol : kFastTol) << what;
    std::printf("  %s: max |logit error| %.3g\n", what.c_str(), worst);
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const std::string& f : test::tiny_families()) {
    v.push_back({f, 1});
    v.push_back({f, 2});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Tiny, GpuGoldenFamilies, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return test::golden_case_name(info.param.family + ".p" + std::to_string(info.param.prompt) +
                                                         ".json");
                         });

}  // namespace
}  // namespace ferrite
