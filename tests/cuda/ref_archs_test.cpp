// The families without a llama.cpp golden in the shared data on the GPU:
// gemma, gemma3 (sliding and global layers, two RoPE tables), granite (the
// family added as one file, arch_granite.cpp) against the double-precision
// forwards written from their published definitions (tests/model/ref_*.h),
// and bert's hidden states against tiny_bert.h's. Every position's logits,
// every layer on the GPU and the first one on the CPU, the prompt in one
// batch and one token a pass (decode kernels and graphs), in the exact and
// the fast arithmetic; the CPU tests' bounds in exact mode.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "device_util.h"
#include "model/model.h"
#include "model/ref_gemma.h"
#include "model/ref_gpt_oss.h"
#include "model/ref_granite.h"
#include "model/tiny_bert.h"
#include "model_util.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

constexpr int64_t kCtx = 64;
// Exact mode: tests/model/ref_decoders_test.cpp's bounds (two layers 1e-3,
// the seven-layer gemma3 5e-3); fast mode: f32 attention probabilities and
// other summation orders (the F32 golden tests' fast bound).
constexpr double kExactTol = 1e-3;
constexpr double kDeepExactTol = 5e-3;
constexpr double kFastTol = 2e-2;

std::vector<int32_t> prompt(int64_t n, int64_t n_vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((7 * i * i + 3 * i + 1) % n_vocab);
  return t;
}

// Every pass's largest |logit - reference| within the bound of its mode.
void check_passes(const char* name, const std::filesystem::path& path, const std::vector<int32_t>& tokens,
                  const test::ref::Rows& expected, double exact_tol) {
  auto model = model::Model::load(path.string());
  cuda::test::check_passes(model, tokens, kCtx, cuda::test::standard_passes(static_cast<int64_t>(tokens.size())),
                           name, exact_tol, kFastTol, cuda::test::against_reference(expected));
}

TEST(GpuRefArchs, Gemma) {
  FERRITE_REQUIRE_GPU();
  test::GemmaConfig c;
  test::TinyGemma tiny(c);
  const std::vector<int32_t> tokens = prompt(12, c.n_vocab);
  check_passes("gemma", tiny.path(), tokens, tiny.reference(tokens), kExactTol);
}

TEST(GpuRefArchs, Gemma3SlidingAndGlobalLayers) {
  FERRITE_REQUIRE_GPU();
  test::GemmaConfig c;
  c.version = 3;
  c.n_layer = 7;  // layers 0-4 and 6 slide, layer 5 is global
  c.n_embd = 64;
  c.n_head = 8;
  c.n_head_kv = 2;
  c.head_dim = 16;
  c.n_ff = 96;
  c.embd_scale = 2.0;
  c.n_swa = 5;
  c.freq_base = 1000000.0;
  test::TinyGemma tiny(c);
  const std::vector<int32_t> tokens = prompt(16, c.n_vocab);  // beyond the window
  check_passes("gemma3", tiny.path(), tokens, tiny.reference(tokens), kDeepExactTol);
}

// gpt-oss (tests/model/gpt_oss_test.cpp's model): attention sinks, the
// sliding window on the even layers, biases everywhere, the router's
// softmax over the chosen logits, the clamped SwiGLU; head size 64 takes the
// tiled and decode attention kernels in fast mode.
TEST(GpuRefArchs, GptOss) {
  FERRITE_REQUIRE_GPU();
  test::TinyGptOss tiny(test::GptOssConfig{});
  const std::vector<int32_t> tokens = test::tiny_family_prompt(1);  // beyond the window
  check_passes("gpt-oss", tiny.path(), tokens, tiny.reference(tokens), kExactTol);
}

TEST(GpuRefArchs, Granite) {
  FERRITE_REQUIRE_GPU();
  test::GraniteConfig c;
  test::TinyGranite tiny(c);
  const std::vector<int32_t> tokens = prompt(12, c.n_vocab);
  check_passes("granite", tiny.path(), tokens, tiny.reference(tokens), kExactTol);
}

// bert: two sequences in one batch, every token's hidden state, on the GPU
// (-ngl all and the first layer on the CPU) against the reference.
TEST(GpuRefArchs, BertHiddenStates) {
  FERRITE_REQUIRE_GPU();
  test::TinyBert tiny(/*pooling none*/ 0);
  auto model = model::Model::load(tiny.path().string());
  const std::vector<int32_t> a = {1, 7, 3, 49, 12}, b = {4, 4, 20};
  const std::vector<double> ra = tiny.reference(a), rb = tiny.reference(b);
  const int64_t n_embd = test::TinyBert::kEmbd;
  for (int ngl : {runtime::kAllLayers, 1}) {
    runtime::ContextParams cp;
    cp.n_ctx = kCtx;
    cp.n_threads = 2;
    cp.n_gpu_layers = ngl;
    runtime::Context ctx(model, cp);
    runtime::Batch batch;
    for (size_t i = 0; i < a.size(); ++i) batch.add(a[i], static_cast<int32_t>(i), 0, true);
    for (size_t i = 0; i < b.size(); ++i) batch.add(b[i], static_cast<int32_t>(i), 1, true);
    ctx.decode(batch);
    double worst = 0;
    for (size_t i = 0; i < a.size() + b.size(); ++i) {
      const std::span<const float> s = ctx.token_embeddings(static_cast<int64_t>(i));
      const bool in_a = i < a.size();
      const std::vector<double>& r = in_a ? ra : rb;
      const size_t j = in_a ? i : i - a.size();
      for (int64_t d = 0; d < n_embd; ++d) worst = std::max(worst, std::fabs(s[d] - r[j * n_embd + d]));
    }
    EXPECT_LE(worst, kExactTol) << "-ngl " << ngl;
    std::printf("  bert (-ngl %d): max |state error| %.3g\n", ngl, worst);
  }
}

}  // namespace
}  // namespace ferrite
