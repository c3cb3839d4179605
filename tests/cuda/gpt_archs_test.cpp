// The GPT-style families (model/gpt_style.h: phi2, starcoder, bloom, mpt,
// refact, jais, qwen, codeshell, chatglm; ALiBi in four of them) on the GPU against
// llama.cpp's goldens of their tiny models (tests/model/tiny_gpt.h,
// tests/model/golden): every layer on the GPU and the first on the CPU, the
// prompt in one batch and one token a pass (decode kernels and graphs),
// in the exact and the fast arithmetic; the CPU test's bound (1e-3) in
// exact mode, the F32 golden tests' fast bound otherwise.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "device_util.h"
#include "model/golden.h"
#include "model/model.h"
#include "model/ref_gptj.h"
#include "model/tiny_gpt.h"
#include "model_util.h"
#include "runtime/offload.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

constexpr int64_t kCtx = 64;
constexpr double kExactTol = 1e-3;
constexpr double kFastTol = 2e-2;

class GpuGptArchs : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuGptArchs, MatchesLlamaCpp) {
  FERRITE_REQUIRE_GPU();
  const std::string arch = GetParam();
  FERRITE_SHARED_FILE(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const test::TinyGpt tiny(test::tiny_gpt_config(arch), vocab);
  auto model = model::Model::load(tiny.path().string());
  const test::Golden g = test::load_golden(std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden" /
                                           ("tiny-" + arch + ".p1.json"));
  const size_t nv = static_cast<size_t>(model->hparams().n_vocab);
  cuda::test::check_passes(model, g.tokens, kCtx, cuda::test::standard_passes(static_cast<int64_t>(g.tokens.size())),
                           arch, kExactTol, kFastTol, cuda::test::against_golden(g, nv));
}

// gptj against the double-precision forward (tests/model/ref_gptj.h): every logit.
TEST(GpuGptj, EveryLogitMatchesTheReference) {
  FERRITE_REQUIRE_GPU();
  FERRITE_SHARED_FILE(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const test::TinyGptConfig c = test::tiny_gpt_config("gptj");
  const test::TinyGpt tiny(c, vocab);
  auto model = model::Model::load(tiny.path().string());
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < 24; ++i) tokens.push_back((37 * i * i + 11 * i + 5) % 509 + 3);
  const test::ref::Rows want = test::ref::gptj_forward(tiny.gguf(), c, tokens);
  const int64_t n = static_cast<int64_t>(tokens.size());
  const std::vector<cuda::test::Pass> passes = {
      {n, runtime::kAllLayers, true}, {1, runtime::kAllLayers, true}, {n, runtime::kAllLayers, false}, {1, 1, false}};
  cuda::test::check_passes(model, tokens, kCtx, passes, "gptj", kExactTol, kFastTol,
                           cuda::test::against_reference(want));
}

INSTANTIATE_TEST_SUITE_P(Families, GpuGptArchs,
                         ::testing::Values("phi2", "starcoder", "bloom", "mpt", "refact", "jais", "qwen", "codeshell",
                                           "chatglm", "mpt-clamp"),
                         [](const auto& info) { return test::golden_case_name(info.param); });

}  // namespace
}  // namespace ferrite
