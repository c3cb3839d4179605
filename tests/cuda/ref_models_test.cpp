// qwen3 and qwen3moe on the GPU (issue 9). The shared data has no llama.cpp
// golden for them, so, as on the CPU (tests/model/ref_decoders_test.cpp),
// the reference is a tiny random model and a double-precision forward
// written from the architecture's published definition
// (tests/model/ref_qwen3.h): per-head q/k norms, NeoX RoPE, and for
// qwen3moe a softmax router whose top-k weights are renormalised, with no
// shared expert. Every position's logits, with every layer on the GPU and
// with the first layer on the CPU, prompt in one batch and one token a pass
// (the decode kernels and graphs), in the exact and the fast arithmetic.
// Those tiny models (head_dim 16, F32 weights) take the GPU's exact
// kernels everywhere; a larger one (head_dim 64, rows of 256), quantized
// with `ferrite quantize`, takes the fast ones (the decode attention, the
// quantized GEMVs, the expert GEMV) against the CPU engine on the same file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "device_util.h"
#include "model/model.h"
#include "model/ref_qwen3.h"
#include "model_util.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

// Exact products: the CPU test's bound for two-layer models (f32 against
// double plus f16 rounding flips, measured within 2e-4 there).
constexpr double kExactTol = 1e-3;
// Fast products: f32 attention probabilities where the reference rounds
// them to f16, and sums in other orders (the F32 golden tests' fast bound).
constexpr double kFastTol = 2e-2;
constexpr int64_t kCtx = 64;
constexpr int64_t kPromptLen = 12;

std::vector<int32_t> prompt(int64_t n, int64_t n_vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((7 * i * i + 3 * i + 1) % n_vocab);
  return t;
}

std::vector<float> eval_all(const std::shared_ptr<const model::Model>& model, const std::vector<int32_t>& tokens,
                            const cuda::test::Pass& p) {
  return cuda::test::eval_logits(model, tokens, kCtx, p.n_batch, p.n_gpu_layers);
}

class GpuRefQwen3 : public ::testing::TestWithParam<bool> {};

TEST_P(GpuRefQwen3, MatchesReference) {
  FERRITE_REQUIRE_GPU();
  test::Qwen3Config c;
  c.moe = GetParam();
  c.tied_output = !c.moe;
  test::TinyQwen3 tiny(c);
  auto model = model::Model::load(tiny.path().string());
  ASSERT_EQ(model->hparams().n_expert, c.moe ? c.n_expert : 0);
  const std::vector<int32_t> tokens = prompt(kPromptLen, c.n_vocab);
  const test::ref::Rows expected = tiny.reference(tokens);
  ASSERT_EQ(expected.size(), tokens.size() * static_cast<size_t>(c.n_vocab));

  cuda::test::check_passes(model, tokens, kCtx, cuda::test::standard_passes(kPromptLen), c.moe ? "qwen3moe" : "qwen3",
                           kExactTol, kFastTol, cuda::test::against_reference(expected));
}

INSTANTIATE_TEST_SUITE_P(Archs, GpuRefQwen3, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Moe" : "Dense"; });

// Quantized models against the CPU engine on the same file, relative to the
// position's largest |logit|: the GPU golden tests' bounds for a quantized
// model's every position and mean (tests/cuda/golden_test.cpp).
constexpr double kQuantTol = 5e-2;
constexpr double kQuantMeanTol = 2.5e-2;

struct QuantCase {
  bool moe;
  const char* type;  // ferrite quantize preset
};

class GpuQwen3Quantized : public ::testing::TestWithParam<QuantCase> {};

TEST_P(GpuQwen3Quantized, MatchesTheCpuEngine) {
  FERRITE_REQUIRE_GPU();
  const std::filesystem::path bin = cuda::test::ferrite_binary();
  ASSERT_TRUE(std::filesystem::exists(bin)) << "no ferrite binary at " << bin;
  test::Qwen3Config c;
  c.moe = GetParam().moe;
  c.n_embd = 256;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.head_dim = 64;
  c.n_ff = 512;
  c.n_ff_exp = 256;
  c.tied_output = false;
  test::TinyQwen3 tiny(c);
  const cuda::test::QuantizedCopy quantized(tiny.path(), GetParam().type);

  auto model = model::Model::load(quantized.path().string());
  const std::vector<int32_t> tokens = prompt(2 * kPromptLen, c.n_vocab);
  const size_t nv = static_cast<size_t>(c.n_vocab);
  const std::vector<float> cpu = eval_all(model, tokens, {static_cast<int64_t>(tokens.size()), 0, true});
  const int64_t n = static_cast<int64_t>(tokens.size());
  const std::vector<cuda::test::Pass> passes = {{n, runtime::kAllLayers, true},  {1, runtime::kAllLayers, true},
                                                {n, runtime::kAllLayers, false}, {5, runtime::kAllLayers, false},
                                                {1, runtime::kAllLayers, false}, {1, 1, false}};
  const std::string name = std::string(c.moe ? "qwen3moe " : "qwen3 ") + GetParam().type;
  // Each position's largest |gpu - cpu| over its largest |cpu logit|, every one and their mean within bounds.
  const cuda::test::LogitError relative = [&](const std::vector<float>& gpu) {
    EXPECT_EQ(gpu.size(), cpu.size());
    if (gpu.size() != cpu.size()) return std::numeric_limits<double>::infinity();
    double worst = 0, total = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
      double err = 0, scale = 0;
      for (size_t v = 0; v < nv; ++v) {
        err = std::max(err, static_cast<double>(std::fabs(gpu[i * nv + v] - cpu[i * nv + v])));
        scale = std::max(scale, static_cast<double>(std::fabs(cpu[i * nv + v])));
      }
      worst = std::max(worst, err / scale);
      total += err / scale;
      EXPECT_LE(err / scale, kQuantTol) << name << ", position " << i;
    }
    const double mean = total / static_cast<double>(tokens.size());
    EXPECT_LE(mean, kQuantMeanTol) << name;
    std::printf("  %s: mean error %.3g (relative to the largest logit)\n", name.c_str(), mean);
    return worst;
  };
  cuda::test::check_passes(model, tokens, kCtx, passes, name, kQuantTol, kQuantTol, relative,
                           "max error (relative to the largest logit)");
}

INSTANTIATE_TEST_SUITE_P(Types, GpuQwen3Quantized,
                         ::testing::Values(QuantCase{true, "Q4_K_M"}, QuantCase{true, "Q8_0"},
                                           QuantCase{false, "Q4_K_M"}, QuantCase{false, "Q4_0"}),
                         [](const auto& info) {
                           return std::string(info.param.moe ? "Moe_" : "Dense_") + info.param.type;
                         });

}  // namespace
}  // namespace ferrite
