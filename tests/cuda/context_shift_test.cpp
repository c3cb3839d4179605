// Context shift with the cache on the GPU (every layer offloaded, and a
// partial offload whose first layers keep their cache on the CPU): the GPU
// layers' keys are turned through host copies with the CPU's row code
// (CudaBackend::rotate_cached_keys). As on the CPU
// (tests/runtime/context_shift_test.cpp): dropping the first tokens and
// sliding the rest back must give the logits of dropping them and going on
// at the old positions (attention sees position differences only), within
// the same tolerance; f16 and q8_0 caches.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "model/model.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

constexpr double kShiftRelTol = 2e-3;  // of the logit scale, as on the CPU

std::vector<float> eval_at(runtime::Context& ctx, const std::vector<int32_t>& toks, int32_t start) {
  runtime::Batch b;
  for (size_t i = 0; i < toks.size(); ++i) b.add(toks[i], start + static_cast<int32_t>(i), 0, i + 1 == toks.size());
  ctx.decode(b);
  return {ctx.logits(0).begin(), ctx.logits(0).end()};
}

struct GpuShiftCase {
  const char* model;
  int n_gpu_layers;
  TensorType cache;
  double tol;
};

class GpuContextShift : public ::testing::TestWithParam<GpuShiftCase> {};

TEST_P(GpuContextShift, SlidingBackKeepsRelativePositions) {
  const GpuShiftCase c = GetParam();
  FERRITE_SHARED_FILE(path, c.model);
  auto model = model::Model::load(path.string());
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> d(3, 4000);
  std::vector<int32_t> tokens(40);
  for (auto& t : tokens) t = d(rng);
  constexpr int32_t kDrop = 13;
  const runtime::ContextParams cp{.n_ctx = 128, .n_threads = 2, .cache_type = c.cache, .cache_type_v = c.cache,
                                  .n_gpu_layers = c.n_gpu_layers};
  runtime::Context shifted(model, cp);
  shifted.eval(tokens);
  shifted.remove_range(0, 0, kDrop);
  shifted.shift_sequence(0, kDrop, -1, -kDrop);
  const std::vector<float> got = eval_at(shifted, {tokens[5]}, 40 - kDrop);

  runtime::Context ref(model, cp);
  ref.eval(tokens);
  ref.remove_range(0, 0, kDrop);
  const std::vector<float> want = eval_at(ref, {tokens[5]}, 40);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  EXPECT_LT(worst, c.tol * scale);
  std::printf("  %s ngl %d: max |logit difference| %.3g\n", c.model, c.n_gpu_layers, worst);
}

INSTANTIATE_TEST_SUITE_P(
    Models, GpuContextShift,
    ::testing::Values(GpuShiftCase{"models/synth/synth-llama-f32.gguf", runtime::kAllLayers, TensorType::F16, kShiftRelTol},
                      GpuShiftCase{"models/synth/synth-llama-f32.gguf", 1, TensorType::F16, kShiftRelTol},
                      GpuShiftCase{"models/synth/synth-qwen2-f32.gguf", runtime::kAllLayers, TensorType::F16, kShiftRelTol},
                      GpuShiftCase{"models/synth/synth-llama-Q4_0.gguf", runtime::kAllLayers, TensorType::Q8_0,
                                   8 * kShiftRelTol}));

}  // namespace
}  // namespace ferrite
