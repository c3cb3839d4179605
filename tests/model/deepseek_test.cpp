// deepseek (V1) and deepseek2 (multi-head latent attention) against
// llama.cpp c392e50's logits of the same tiny random models
// (tiny_deepseek.h; golden/deepseek*.json, made by the golden dumper of
// shared/README.md from the files DISABLED_WriteModels writes): every
// position's top-20 logits and log-sum-exp, in one batch, in chunks and one
// token at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "golden.h"
#include "model/model.h"
#include "model/tiny_deepseek.h"
#include "single_sequence.h"

namespace ferrite {
namespace {

// F32 weights: the goldens' tolerance (golden_archs_test.cpp).
constexpr double kAbsTolerance = 1e-3;

std::filesystem::path golden_file(const std::string& name, int prompt) { return test::deepseek_golden(name, prompt); }

// Largest error of every position of the golden's prompt, evaluated in passes of n_batch.
double worst_error(const model::Model& m, const test::Golden& g, int64_t n_batch) {
  test::SingleSequence seq(m, 256, 2);
  const std::vector<float> logits = seq.eval(g.tokens, n_batch);
  const size_t nv = static_cast<size_t>(m.hparams().n_vocab);
  EXPECT_EQ(g.positions.size(), g.tokens.size());
  double worst = 0;
  for (size_t i = 0; i < g.positions.size() && i < g.tokens.size(); ++i) {
    worst = std::max(worst, test::max_logit_error(std::span<const float>(logits.data() + i * nv, nv), g.positions[i]));
  }
  return worst;
}

using Case = test::DeepseekCase;

class DeepseekGolden : public ::testing::TestWithParam<Case> {};

TEST_P(DeepseekGolden, MatchesLlamaCpp) {
  FERRITE_SHARED_FILE(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const Case& c = GetParam();
  const auto file = test::make_tiny_deepseek(c.shape);
  auto m = model::Model::load(file->path().string());
  for (int p = 1; p <= 2; ++p) {
    const test::Golden g = test::load_golden(golden_file(c.name, p));
    ASSERT_EQ(g.tokens, test::deepseek_prompt(p)) << "the golden's prompt";
    for (int64_t n_batch : {int64_t{512}, int64_t{5}, int64_t{1}}) {
      const double err = worst_error(*m, g, n_batch);
      EXPECT_LE(err, kAbsTolerance) << c.name << " prompt " << p << " in passes of " << n_batch;
      std::printf("  %s p%d batch %lld: max |logit error| %.3g\n", c.name, p, static_cast<long long>(n_batch), err);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, DeepseekGolden, ::testing::ValuesIn(test::deepseek_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// The test sees the family's quirk: the same model without its shared
// experts (their down projections zeroed) misses the golden by far.
TEST(DeepseekGoldenSensitivity, SharedExpertsAreSeen) {
  FERRITE_SHARED_FILE(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const test::DeepseekShape s = test::deepseek_cases().at(0).shape;
  const auto file = test::make_tiny_deepseek(s, [&](test::TinyGguf& m) {
    for (int64_t il = s.n_dense; il < s.n_layer; ++il) {
      std::vector<float>& w = m.values("blk." + std::to_string(il) + ".ffn_down_shexp.weight");
      std::fill(w.begin(), w.end(), 0.0f);
    }
  });
  auto m = model::Model::load(file->path().string());
  EXPECT_GT(worst_error(*m, test::load_golden(golden_file("deepseek", 1)), 512), 30 * kAbsTolerance);
}

// Writes the tiny models for the golden dumper:
//   FERRITE_TINY_OUT=/tmp/ds build/tests/test_model --gtest_also_run_disabled_tests
//     --gtest_filter='DeepseekGolden*.DISABLED_WriteModels'
TEST(DeepseekGoldenFiles, DISABLED_WriteModels) {
  FERRITE_SHARED_FILE(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const char* out = std::getenv("FERRITE_TINY_OUT");
  ASSERT_NE(out, nullptr) << "set FERRITE_TINY_OUT to a folder";
  std::filesystem::create_directories(out);
  for (const Case& c : test::deepseek_cases()) {
    const auto file = test::make_tiny_deepseek(c.shape);
    std::filesystem::copy_file(file->path(), std::filesystem::path(out) / (std::string(c.name) + ".gguf"),
                               std::filesystem::copy_options::overwrite_existing);
  }
}

}  // namespace
}  // namespace ferrite
