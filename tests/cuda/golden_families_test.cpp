// The tiny models of issue 27's families (tests/model/tiny_families.h)
// against llama.cpp's goldens (tests/model/golden/) on the GPU: every layer
// on the GPU and only the last one, the prompt in one pass (prefill kernels)
// and one token a pass (decode kernels, graphs), in the exact arithmetic with
// the CPU test's bound and in the fast one with the F32 goldens' fast bound
// (tests/cuda/golden_test.cpp); ik_llama.cpp's families (tiny_ik_families())
// against its goldens with the CPU test's bound 3e-3. The embedding families
// (tiny_embedding_families(): nomic-bert, jina-bert-v2) against their hidden
// states and pooled embedding: every layer on the GPU and only the last one,
// the golden's prompt as the second sequence of a batch after the other
// prompt, in both arithmetics with the CPU test's bound 1e-3 (the encoders'
// attention is f32 in both).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "device_util.h"
#include "model/golden.h"
#include "model/model.h"
#include "model/tiny_families.h"
#include "model_util.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

constexpr double kExactTol = 1e-3;
constexpr double kDeepExactTol = 3e-3;  // 8 layers and more (baichuan's 32): the CPU test's bound
constexpr double kIkExactTol = 3e-3;    // ik_llama.cpp's goldens (tiny_ik_families()): the CPU test's bound
constexpr double kFastTol = 2e-2;
constexpr int64_t kCtx = 64;

struct Case {
  std::string family;
  int prompt;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.family << " p" << c.prompt; }

class GpuGoldenFamilies : public ::testing::TestWithParam<Case> {};

TEST_P(GpuGoldenFamilies, TopLogitsAndLogSumExp) {
  FERRITE_REQUIRE_GPU();
  const Case& c = GetParam();
  const test::Golden g = test::load_golden(std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden" /
                                           (c.family + ".p" + std::to_string(c.prompt) + ".json"));
  const auto tiny = test::make_tiny_family(c.family);
  auto model = model::Model::load(tiny->path().string());
  const size_t nv = static_cast<size_t>(model->hparams().n_vocab);
  const std::vector<std::string>& ik = test::tiny_ik_families();
  const double exact_tol = std::find(ik.begin(), ik.end(), c.family) != ik.end() ? kIkExactTol
                           : model->hparams().n_layer >= 8                        ? kDeepExactTol
                                                                                  : kExactTol;
  cuda::test::check_passes(model, g.tokens, kCtx, cuda::test::standard_passes(static_cast<int64_t>(g.tokens.size())),
                           c.family + " p" + std::to_string(c.prompt), exact_tol, kFastTol,
                           cuda::test::against_golden(g, nv));
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const std::vector<std::string>* list : {&test::tiny_families(), &test::tiny_ik_families()}) {
    for (const std::string& f : *list) {
      if (!test::tiny_family_has_golden(f)) continue;
      v.push_back({f, 1});
      v.push_back({f, 2});
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Tiny, GpuGoldenFamilies, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return test::golden_case_name(info.param.family + ".p" + std::to_string(info.param.prompt) +
                                                         ".json");
                         });

class GpuGoldenEmbeddingFamilies : public ::testing::TestWithParam<Case> {};

TEST_P(GpuGoldenEmbeddingFamilies, StatesAndPooled) {
  FERRITE_REQUIRE_GPU();
  const Case& c = GetParam();
  const test::EmbeddingGolden g = test::load_embedding_golden(
      std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden" /
      (c.family + ".p" + std::to_string(c.prompt) + ".json"));
  const auto tiny = test::make_tiny_embedding_family(c.family);
  auto model = model::Model::load(tiny->path().string());
  const int64_t n_embd = model->hparams().n_embd;
  const std::vector<int32_t> other = test::tiny_family_prompt(3 - c.prompt);
  for (int ngl : {runtime::kAllLayers, 1}) {
    for (bool exact : {true, false}) {
      const cuda::test::ProductMode mode(exact);
      runtime::ContextParams cp;
      cp.n_ctx = kCtx;
      cp.n_threads = 2;
      cp.n_gpu_layers = ngl;
      runtime::Context ctx(model, cp);
      runtime::Batch batch;
      for (size_t i = 0; i < other.size(); ++i) batch.add(other[i], static_cast<int32_t>(i), 0, true);
      for (size_t i = 0; i < g.tokens.size(); ++i) batch.add(g.tokens[i], static_cast<int32_t>(i), 1, true);
      ctx.decode(batch);
      double worst = 0;
      for (size_t i = 0; i < g.tokens.size(); ++i) {
        const std::span<const float> st = ctx.token_embeddings(static_cast<int64_t>(other.size() + i));
        ASSERT_EQ(st.size(), static_cast<size_t>(n_embd));
        for (int64_t d = 0; d < n_embd; ++d) worst = std::max(worst, std::fabs(st[d] - g.states[i][d]));
      }
      const std::span<const float> pooled = ctx.embeddings(1);
      ASSERT_EQ(pooled.size(), g.pooled.size());
      for (size_t d = 0; d < pooled.size(); ++d) worst = std::max(worst, std::fabs(pooled[d] - g.pooled[d]));
      const std::string what = c.family + " p" + std::to_string(c.prompt) + ", -ngl " +
                               (ngl < 0 ? "all" : std::to_string(ngl)) + (exact ? ", exact" : ", fast");
      EXPECT_LE(worst, kExactTol) << what;
      std::printf("  %s: max |state or pooled error| %.3g\n", what.c_str(), worst);
    }
  }
}

std::vector<Case> embedding_cases() {
  std::vector<Case> v;
  for (const std::string& f : test::tiny_embedding_families()) {
    v.push_back({f, 1});
    v.push_back({f, 2});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Tiny, GpuGoldenEmbeddingFamilies, ::testing::ValuesIn(embedding_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return test::golden_case_name(info.param.family + ".p" + std::to_string(info.param.prompt) +
                                                         ".json");
                         });

}  // namespace
}  // namespace ferrite
