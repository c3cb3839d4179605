// gpt-oss with MXFP4 experts on the GPU: the tiny gpt-oss model's
// MXFP4_MOE copy (tests/model/gpt_oss_mxfp4_test.cpp, whose CPU twin this
// is) with every layer offloaded, against ik_llama.cpp's logits of the same
// file (tests/model/golden/gpt-oss-MXFP4_MOE.p1.json) and against the CPU's
// own evaluation, in one pass and one token per pass, in the exact and the
// fast product modes. The expert products take MXFP4 rows of the expert
// stacks (row slices of 17-byte blocks) with the experts' biases.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "device_util.h"
#include "gguf/file.h"
#include "model/golden.h"
#include "model/model.h"
#include "model/quantized_copy.h"
#include "model/ref_gpt_oss.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

constexpr double kTol = 0.05;    // relative to the logit scale, every position, against the CPU (the quantized goldens' bound)
constexpr double kIkTol = 0.08;  // against ik_llama.cpp, as the CPU twin (its own 8-bit activations differ from ours)

std::vector<float> logits(const std::shared_ptr<const model::Model>& m, const std::vector<int32_t>& tokens,
                          int64_t n_batch, int ngl) {
  runtime::ContextParams cp;
  cp.n_ctx = 64;
  cp.n_batch = n_batch;
  cp.n_threads = 2;
  cp.n_gpu_layers = ngl;
  runtime::Context ctx(m, cp);
  const std::span<const float> all = ctx.eval(tokens, 0, true);
  return {all.begin(), all.end()};
}

TEST(GpuGptOssMxfp4, MatchesIkLlamaAndTheCpu) {
  FERRITE_REQUIRE_GPU();
  test::TinyGptOss tiny(test::GptOssConfig{});
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / "gpu-tiny-gpt-oss-MXFP4_MOE.gguf";
  test::write_quantized_copy(gguf::File::open(tiny.path().string()), "MXFP4_MOE", false, path.string());
  const test::Golden g = test::load_golden(std::filesystem::path(FERRITE_SOURCE_DIR) /
                                           "tests/model/golden/gpt-oss-MXFP4_MOE.p1.json");
  ASSERT_EQ(g.tokens, test::tiny_family_prompt(1));
  std::shared_ptr<const model::Model> m = model::Model::load(path.string());
  const size_t nv = static_cast<size_t>(m->hparams().n_vocab), n = g.tokens.size();
  const std::vector<float> cpu = logits(m, g.tokens, 512, 0);
  for (bool exact : {true, false}) {
    const cuda::test::ProductMode mode(exact);
    for (int64_t n_batch : {int64_t{512}, int64_t{1}}) {
      const std::vector<float> gpu = logits(m, g.tokens, n_batch, runtime::kAllLayers);
      ASSERT_EQ(gpu.size(), n * nv);
      double ik = 0, own = 0;
      for (size_t i = 0; i < n; ++i) {
        const double scale = test::logit_scale(g.positions[i]);
        const double e = test::max_logit_error(std::span<const float>(gpu.data() + i * nv, nv), g.positions[i]) / scale;
        double d = 0;
        for (size_t v = 0; v < nv; ++v) d = std::max(d, static_cast<double>(std::fabs(gpu[i * nv + v] - cpu[i * nv + v])));
        EXPECT_LE(e, kIkTol) << "position " << i << " against ik_llama.cpp, batch " << n_batch << (exact ? " exact" : " fast");
        EXPECT_LE(d / scale, kTol) << "position " << i << " against the CPU, batch " << n_batch;
        ik = std::max(ik, e);
        own = std::max(own, d / scale);
      }
      std::printf("  %s products, batch %lld: max relative error %.3g against ik_llama.cpp, %.3g against the CPU\n",
                  exact ? "exact" : "fast", static_cast<long long>(n_batch), ik, own);
    }
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ferrite
