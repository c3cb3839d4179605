// deepseek (V1) and deepseek2 (multi-head latent attention) against
// llama.cpp c392e50's logits of the same tiny random models
// (tiny_deepseek.h; golden/deepseek*.json, made by the golden dumper of
// shared/README.md from the files DISABLED_WriteModels writes): every
// position's top-20 logits and log-sum-exp, in one batch, in chunks and one
// token at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "golden.h"
#include "model/model.h"
#include "model/ref_deepseek2.h"
#include "model/tiny_deepseek.h"
#include "single_sequence.h"

namespace ferrite {
namespace {

constexpr double kAbsTolerance = test::kDeepseekTolerance;
constexpr double kMlaTolerance = test::kMlaTolerance;
double tolerance(const test::DeepseekShape& s) { return test::deepseek_tolerance(s); }

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

// One model and one prompt ("<model>_p2": scripts/test-neon leaves the
// longer prompt out under qemu).
struct Prompted {
  const Case* c;
  int prompt;
};
void PrintTo(const Prompted& p, std::ostream* os) { *os << p.c->name << " p" << p.prompt; }

std::vector<Prompted> prompted_cases() {
  std::vector<Prompted> v;
  for (const Case& c : test::deepseek_cases()) {
    for (int p = 1; p <= 2; ++p) v.push_back({&c, p});
  }
  return v;
}

class DeepseekGolden : public ::testing::TestWithParam<Prompted> {};

// The prompt in one batch, in passes of 5 and one token at a time (the
// latter two on the short prompt only: the same arithmetic, CI time).
TEST_P(DeepseekGolden, MatchesLlamaCpp) {
  FERRITE_SHARED_FILE(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const Case& c = *GetParam().c;
  const int p = GetParam().prompt;
  const auto file = test::make_tiny_deepseek(c.shape);
  auto m = model::Model::load(file->path().string());
  const test::Golden g = test::load_golden(golden_file(c.name, p));
  ASSERT_EQ(g.tokens, test::deepseek_prompt(p)) << "the golden's prompt";
  const std::vector<int64_t> batches = p == 1 ? std::vector<int64_t>{512, 5, 1} : std::vector<int64_t>{512};
  for (int64_t n_batch : batches) {
    const double err = worst_error(*m, g, n_batch);
    EXPECT_LE(err, tolerance(c.shape)) << c.name << " prompt " << p << " in passes of " << n_batch;
    std::printf("  %s p%d batch %lld: max |logit error| %.3g\n", c.name, p, static_cast<long long>(n_batch), err);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, DeepseekGolden, ::testing::ValuesIn(prompted_cases()),
                         [](const ::testing::TestParamInfo<Prompted>& i) {
                           return test::golden_case_name(i.param.c->name) + "_p" + std::to_string(i.param.prompt);
                         });

// Largest |logit - reference| over every position, and the golden's (its
// top-20 and log-sum-exp) against the same reference.
struct RefErrors {
  double ours = 0, golden = 0;
};
RefErrors reference_errors(const model::Model& m, const test::TinyGguf& file, const test::DeepseekShape& s,
                           const test::Golden& g) {
  const test::ref::Rows ref = test::ref::deepseek2_reference(file, s, g.tokens);
  test::SingleSequence seq(m, 256, 2);
  const std::vector<float> ours = seq.eval(g.tokens, 512);
  const size_t nv = static_cast<size_t>(s.n_vocab);
  RefErrors e;
  for (size_t i = 0; i < ours.size(); ++i) e.ours = std::max(e.ours, std::fabs(ours[i] - ref[i]));
  for (size_t i = 0; i < g.positions.size(); ++i) {
    const std::vector<float> row(ref.begin() + i * nv, ref.begin() + (i + 1) * nv);
    e.golden = std::max(e.golden, test::max_logit_error(row, g.positions[i]));
  }
  return e;
}

TEST(DeepseekReference, LatentAttentionAgainstDoublePrecision) {
  FERRITE_SHARED_FILE(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  for (const Case& c : test::deepseek_cases()) {
    if (!c.shape.mla) continue;
    const auto file = test::make_tiny_deepseek(c.shape);
    auto m = model::Model::load(file->path().string());
    for (int p = 1; p <= 1; ++p) {  // the short prompt (measured on both: deepseek_test.cpp's bounds)
      const RefErrors e = reference_errors(*m, *file, c.shape, test::load_golden(golden_file(c.name, p)));
      std::printf("  %s p%d: ferrite %.3g, llama.cpp %.3g from the double-precision reference\n", c.name, p, e.ours,
                  e.golden);
      EXPECT_LE(e.ours, tolerance(c.shape)) << c.name << " p" << p;
      EXPECT_LE(e.golden, tolerance(c.shape) / 2) << c.name << " p" << p << ": llama.cpp itself";
    }
  }
}

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

// V3's quirks are seen: without the selection bias, with softmax routing,
// or without YaRN's attention scale (yarn_log_multiplier) the model misses.
TEST(DeepseekGoldenSensitivity, V3RouterAndYarnAreSeen) {
  FERRITE_SHARED_FILE(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const test::DeepseekShape v3 = test::deepseek_cases().at(2).shape;
  ASSERT_EQ(test::deepseek_cases().at(2).name, std::string("deepseek2-v3"));
  const test::Golden g = test::load_golden(golden_file("deepseek2-v3", 1));
  auto miss = [&](const test::DeepseekShape& s, const std::function<void(test::TinyGguf&)>& edit) {
    const auto file = test::make_tiny_deepseek(s, edit);
    auto m = model::Model::load(file->path().string());
    return worst_error(*m, g, 512);
  };
  const auto no_bias = [&](test::TinyGguf& m) {
    for (int64_t il = v3.n_dense; il < v3.n_layer; ++il) {
      std::vector<float>& b = m.values("blk." + std::to_string(il) + ".exp_probs_b.bias");
      std::fill(b.begin(), b.end(), 0.0f);
    }
  };
  test::DeepseekShape softmax = v3, no_mscale = v3;
  softmax.gating = 1;
  no_mscale.yarn_log_mul = 0.0f;
  EXPECT_GT(miss(v3, no_bias), 10 * kMlaTolerance) << "selection bias";
  EXPECT_GT(miss(softmax, {}), 10 * kMlaTolerance) << "sigmoid gating";
  EXPECT_GT(miss(no_mscale, {}), 10 * kMlaTolerance) << "YaRN mscale";
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
