// Context shift on the GPU against a from-scratch evaluation (issue 23): a
// one-layer model's layer-0 keys depend only on their token and position, so
// after llama.cpp's shift (keep n_keep, drop half of the rest, slide the tail
// back, keys turned by CudaBackend::rotate_cached_keys) the cache holds what
// a fresh evaluation of the kept tokens holds, and the next logits must equal
// that evaluation's. Every RoPE kind the CPU test covers
// (tests/runtime/context_shift_test.cpp), with head sizes 64 and 128 so that
// the GPU's fast attention kernels run, and gemma3's local (sliding) layer.
// Tolerance as on the CPU: 2e-3 of the logit scale (one more f16 rounding of
// the turned keys); unrotated keys miss by far more (the last test).
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/file.h"
#include "model/model.h"
#include "model/ref_gemma.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "runtime/sequence.h"
#include "support/logits.h"
#include "support/test_data.h"
#include "support/tiny_llama.h"

namespace ferrite {
namespace {

using test::logit_magnitude;
using test::max_abs_diff;
using test::random_tokens;

constexpr double kShiftRelTol = 2e-3;

struct FreshCase {
  std::string name;
  std::function<std::string(std::vector<std::shared_ptr<void>>& keep)> make;  // returns the model's path
};

test::TinyLlamaConfig llama(const std::string& arch, int64_t head_dim) {
  test::TinyLlamaConfig c;
  c.arch = arch;
  c.n_layer = 1;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.n_embd = 4 * head_dim;
  c.n_ff = 2 * c.n_embd;
  return c;
}

std::string tiny_llama(std::vector<std::shared_ptr<void>>& keep, const test::TinyLlamaConfig& c) {
  const gguf::File vocab = gguf::File::open(test::shared_path("vocab/ggml-vocab-llama-spm.gguf").string());
  auto g = std::shared_ptr<test::TinyGguf>(test::make_tiny_llama(vocab, c).release());
  keep.push_back(g);
  return g->path().string();
}

std::vector<FreshCase> cases() {
  using K = std::vector<std::shared_ptr<void>>;
  return {
      {"llama_hd64", [](K& k) { return tiny_llama(k, llama("llama", 64)); }},
      {"llama_hd128", [](K& k) { return tiny_llama(k, llama("llama", 128)); }},
      {"qwen2_neox", [](K& k) { return tiny_llama(k, llama("qwen2", 64)); }},
      {"yarn",
       [](K& k) {
         test::TinyLlamaConfig c = llama("llama", 64);
         c.rope_scaling = "yarn";
         c.rope_factor = 4.0f;
         c.n_ctx_orig = 16;
         return tiny_llama(k, c);
       }},
      {"linear",
       [](K& k) {
         test::TinyLlamaConfig c = llama("llama", 64);
         c.rope_scaling = "linear";
         c.rope_factor = 2.0f;
         return tiny_llama(k, c);
       }},
      {"llama3_freqs",
       [](K& k) {
         test::TinyLlamaConfig c = llama("llama", 64);
         c.llama3_freqs = true;
         c.freq_base = 500000.0f;
         return tiny_llama(k, c);
       }},
      {"gemma3_local",
       [](K& k) {
         test::GemmaConfig c;
         c.version = 3;
         c.n_layer = 1;
         c.n_embd = 128;
         c.n_head = 2;
         c.n_head_kv = 1;
         c.head_dim = 64;
         c.n_ff = 256;
         c.n_swa = 16;
         c.rope_linear = 8.0;
         c.freq_base = 1000000.0;
         c.n_ctx = 256;
         auto g = std::make_shared<test::TinyGemma>(c);
         k.push_back(g);
         return g->path().string();
       }},
  };
}

std::string case_name(const ::testing::TestParamInfo<FreshCase>& info) { return info.param.name; }

// The logits after feeding `tokens` through a sequence that shifts at 32
// cells, and the kept tokens.
struct Shifted {
  std::vector<float> logits;
  std::vector<int32_t> kept;
  int64_t dropped = 0;
};

Shifted run_shifted(const std::shared_ptr<const model::Model>& model, const std::vector<int32_t>& tokens) {
  runtime::Context ctx(model, {.n_ctx = 32, .n_threads = 2, .n_gpu_layers = runtime::kAllLayers});
  runtime::Sequence seq(ctx, {.n_keep = 3});
  seq.prefill(std::vector<int32_t>(tokens.begin(), tokens.begin() + 10));
  std::span<const float> logits;
  for (size_t i = 10; i < tokens.size(); ++i) logits = seq.feed(tokens[i]);
  return {{logits.begin(), logits.end()}, seq.cached(), seq.n_dropped()};
}

class GpuShiftFresh : public ::testing::TestWithParam<FreshCase> {};

TEST_P(GpuShiftFresh, ShiftedCacheEqualsFreshEvaluationOfTheKeptTokens) {
  std::vector<std::shared_ptr<void>> keep;
  auto model = model::Model::load(GetParam().make(keep));
  ASSERT_EQ(model->hparams().n_layer, 1);
  const std::vector<int32_t> tokens = random_tokens(45, model->hparams().n_vocab, 5);
  const Shifted s = run_shifted(model, tokens);
  ASSERT_GT(s.dropped, 0);
  ASSERT_LE(static_cast<int64_t>(s.kept.size()), 32);
  ASSERT_TRUE(std::equal(s.kept.begin(), s.kept.begin() + 3, tokens.begin()));
  const auto tail = static_cast<std::ptrdiff_t>(s.kept.size() - 3);
  ASSERT_TRUE(std::equal(s.kept.begin() + 3, s.kept.end(), tokens.end() - tail));

  runtime::Context fresh(model, {.n_ctx = 32, .n_threads = 2, .n_gpu_layers = runtime::kAllLayers});
  const std::span<const float> want = fresh.eval(s.kept);
  ASSERT_EQ(s.logits.size(), want.size());
  EXPECT_LT(max_abs_diff(s.logits, want), kShiftRelTol * logit_magnitude(want)) << GetParam().name;
  std::printf("  %s: dropped %lld, max |diff| %.3g, logit scale %.3g\n", GetParam().name.c_str(),
              static_cast<long long>(s.dropped), max_abs_diff(s.logits, want), logit_magnitude(want));
}

INSTANTIATE_TEST_SUITE_P(Models, GpuShiftFresh, ::testing::ValuesIn(cases()), case_name);

// The comparison can fail: the kept tokens evaluated at the positions they
// had before the shift (keys as they were, unturned) are far from the fresh
// evaluation.
TEST(GpuShiftFreshSensitivity, UnturnedKeysAreFarOff) {
  std::vector<std::shared_ptr<void>> keep;
  auto model = model::Model::load(tiny_llama(keep, llama("llama", 64)));
  const std::vector<int32_t> tokens = random_tokens(45, model->hparams().n_vocab, 5);
  const Shifted s = run_shifted(model, tokens);
  ASSERT_GT(s.dropped, 0);
  const runtime::ContextParams cp{.n_ctx = 64, .n_threads = 2, .n_gpu_layers = runtime::kAllLayers};
  runtime::Context old_positions(model, cp);
  runtime::Batch b;
  const int32_t n_tail = static_cast<int32_t>(s.kept.size() - 3);
  for (int32_t i = 0; i < 3; ++i) b.add(s.kept[static_cast<size_t>(i)], i, 0, false);
  for (int32_t i = 0; i < n_tail; ++i) {
    b.add(s.kept[static_cast<size_t>(3 + i)], 45 - n_tail + i, 0, i + 1 == n_tail);
  }
  old_positions.decode(b);
  const std::vector<float> unturned(old_positions.logits(0).begin(), old_positions.logits(0).end());
  runtime::Context fresh(model, cp);
  const std::span<const float> want = fresh.eval(s.kept);
  EXPECT_GT(max_abs_diff(unturned, want), 20 * kShiftRelTol * logit_magnitude(want));
}

}  // namespace
}  // namespace ferrite
