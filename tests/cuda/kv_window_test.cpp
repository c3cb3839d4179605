// The sliding-window KV cache with GPU layers (runtime/kv_cache.h): a
// context with GPU layers keeps the whole cache for the sliding layers (the
// GPU backend has no window cache; stated in src/runtime/README.md), and its
// logits over a prompt and generation many windows long stay within the
// exact-mode bound of the CPU context that keeps only the window.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "device_util.h"
#include "model/model.h"
#include "model/ref_gemma.h"
#include "model_util.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

constexpr double kExactTol = 5e-3;  // tests/cuda/ref_archs_test.cpp's bound for a deep gemma3

TEST(GpuKvWindow, OffloadKeepsTheWholeCacheAndMatchesTheCpuWindow) {
  FERRITE_REQUIRE_GPU();
  test::GemmaConfig c;
  c.version = 3;
  c.n_layer = 6;  // layers 0-4 slide, layer 5 is global
  c.n_embd = 64;
  c.n_head = 8;
  c.n_head_kv = 2;
  c.head_dim = 16;
  c.n_ff = 96;
  c.n_swa = 24;
  c.freq_base = 1000000.0;
  c.n_ctx = 1024;
  test::TinyGemma tiny(c);
  auto model = model::Model::load(tiny.path().string());
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(c.n_vocab - 1));
  std::vector<int32_t> prompt(600);
  for (int32_t& t : prompt) t = d(rng);

  const cuda::test::ProductMode exact(true);
  runtime::Context cpu(model, {.n_ctx = 1024, .n_batch = 40, .n_threads = 2});
  ASSERT_NE(cpu.cache().window(), nullptr);
  for (int ngl : {runtime::kAllLayers, 1}) {
    runtime::Context gpu(model, {.n_ctx = 1024, .n_batch = 40, .n_threads = 2, .n_gpu_layers = ngl});
    EXPECT_EQ(gpu.cache().window(), nullptr) << "-ngl " << ngl;
    cpu.clear();
    const std::span<const float> a = cpu.eval(prompt, 0, true);
    const std::vector<float> want(a.begin(), a.end());
    const std::span<const float> b = gpu.eval(prompt, 0, true);
    ASSERT_EQ(b.size(), want.size());
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(double{b[i]} - want[i]));
    // Generation one token a step past the prompt.
    for (int step = 0; step < 60; ++step) {
      const int32_t next = prompt[static_cast<size_t>(step)];
      const std::span<const float> x = cpu.eval({&next, 1}, 0);
      const std::vector<float> w(x.begin(), x.end());
      const std::span<const float> y = gpu.eval({&next, 1}, 0);
      for (size_t i = 0; i < w.size(); ++i) worst = std::max(worst, std::fabs(double{y[i]} - w[i]));
    }
    EXPECT_LE(worst, kExactTol) << "-ngl " << ngl;
    std::printf("  -ngl %d: max |GPU whole cache - CPU window| %.3g\n", ngl, worst);
  }
}

}  // namespace
}  // namespace ferrite
