// deepseek and deepseek2 on the GPU: the CPU tests' tiny models
// (tests/model/tiny_deepseek.h) against the same llama.cpp goldens
// (tests/model/golden), every position's top-20 logits and log-sum-exp,
// every layer on the GPU and the first one on the CPU, the prompt in one
// batch and one token a pass (decode kernels and graphs), exact and fast
// arithmetic (exact: the CPU tests' bounds, tiny_deepseek.h; fast: the F32
// golden bound of golden_test.cpp). minicpm3 (the same latent attention with
// NeoX RoPE, LongRoPE factors and MiniCPM's scalings) likewise against its
// golden (tests/model/minicpm3_test.cpp).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "device_util.h"
#include "model/golden.h"
#include "model/model.h"
#include "model/tiny_deepseek.h"
#include "model/tiny_minicpm3.h"
#include "model_util.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

constexpr double kFastTol = 2e-2;

using Case = test::DeepseekCase;

class GpuDeepseek : public ::testing::TestWithParam<Case> {};

TEST_P(GpuDeepseek, MatchesLlamaCpp) {
  FERRITE_REQUIRE_GPU();
  FERRITE_SHARED_FILE(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const Case& c = GetParam();
  const auto file = test::make_tiny_deepseek(c.shape);
  auto model = model::Model::load(file->path().string());
  const size_t nv = static_cast<size_t>(model->hparams().n_vocab);
  struct Pass {
    int64_t n_batch;
    int ngl;
    bool exact;
  };
  for (int p = 1; p <= 2; ++p) {
    const test::Golden g = test::load_golden(test::deepseek_golden(c.name, p));
    const int64_t n = static_cast<int64_t>(g.tokens.size());
    for (const Pass& pass : {Pass{n, runtime::kAllLayers, true}, Pass{1, runtime::kAllLayers, true},
                             Pass{n, runtime::kAllLayers, false}, Pass{1, runtime::kAllLayers, false},
                             Pass{n, 1, true}, Pass{1, 1, false}}) {
      const cuda::test::ProductMode mode(pass.exact);
      const std::vector<float> all = cuda::test::eval_logits(model, g.tokens, 256, pass.n_batch, pass.ngl);
      ASSERT_EQ(all.size(), g.tokens.size() * nv);
      double worst = 0;
      for (size_t i = 0; i < g.positions.size(); ++i) {
        worst = std::max(worst, test::max_logit_error(std::span<const float>(all.data() + i * nv, nv), g.positions[i]));
      }
      const std::string what = std::string(c.name) + " p" + std::to_string(p) + ", batch " +
                               std::to_string(pass.n_batch) + ", -ngl " +
                               (pass.ngl < 0 ? "all" : std::to_string(pass.ngl)) + (pass.exact ? ", exact" : ", fast");
      EXPECT_LE(worst, pass.exact ? test::deepseek_tolerance(c.shape) : kFastTol) << what;
      std::printf("  %s: max |logit error| %.3g\n", what.c_str(), worst);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GpuDeepseek, ::testing::ValuesIn(test::deepseek_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return test::golden_case_name(i.param.name); });

TEST(GpuMiniCpm3, MatchesLlamaCpp) {
  FERRITE_REQUIRE_GPU();
  const auto file = test::make_tiny_minicpm3();
  auto model = model::Model::load(file->path().string());
  const size_t nv = static_cast<size_t>(model->hparams().n_vocab);
  for (int p = 1; p <= 2; ++p) {
    const test::Golden g = test::load_golden(test::deepseek_golden("minicpm3", p));
    const int64_t n = static_cast<int64_t>(g.tokens.size());
    for (const auto& [n_batch, ngl, exact] : {std::tuple{n, runtime::kAllLayers, true},
                                              std::tuple{int64_t{1}, runtime::kAllLayers, true},
                                              std::tuple{n, runtime::kAllLayers, false},
                                              std::tuple{int64_t{1}, runtime::kAllLayers, false},
                                              std::tuple{n, 1, true}}) {
      const cuda::test::ProductMode mode(exact);
      const std::vector<float> all = cuda::test::eval_logits(model, g.tokens, 64, n_batch, ngl);
      ASSERT_EQ(all.size(), g.tokens.size() * nv);
      double worst = 0;
      for (size_t i = 0; i < g.positions.size(); ++i) {
        worst = std::max(worst, test::max_logit_error(std::span<const float>(all.data() + i * nv, nv), g.positions[i]));
      }
      const std::string what = "minicpm3 p" + std::to_string(p) + ", batch " + std::to_string(n_batch) + ", -ngl " +
                               (ngl < 0 ? "all" : std::to_string(ngl)) + (exact ? ", exact" : ", fast");
      EXPECT_LE(worst, exact ? test::kMlaTolerance : kFastTol) << what;
      std::printf("  %s: max |logit error| %.3g\n", what.c_str(), worst);
    }
  }
}

}  // namespace
}  // namespace ferrite
