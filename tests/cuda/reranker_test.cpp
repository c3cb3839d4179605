// The tiny bert reranker (tests/model/tiny_reranker.h) on the GPU against
// llama.cpp c392e50's scores (tests/model/golden/tiny-bert-rerank.json): every
// layer on the GPU (the classification head then runs there, through the same
// operations as on the CPU: gather_rows, linear, softcap as tanh) and only the
// last one, every pair as a sequence of one batch, in the exact and the fast
// arithmetic, within the CPU test's bound 1e-3 (the encoders' attention is
// f32 in both). Segment ids: the tiny transformers cross-encoder
// (tests/convert/cross_encoder_fixture.h) with its pairs' token types staged
// for the GPU's embedding lookup, against transformers' scores and the CPU's
// (H200, 2026-11-27: 1.45e-4 from transformers, as the CPU, and 6.0e-8 from
// the CPU, all layers and -ngl 1, exact and fast; with every token type 0
// the scores would be up to 0.52 off).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/cross_encoder_fixture.h"
#include "device_util.h"
#include "model/model.h"
#include "model/tiny_reranker.h"
#include "model_util.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

constexpr double kTol = 1e-3;

TEST(GpuReranker, ScoresMatchLlamaCpp) {
  FERRITE_REQUIRE_GPU();
  const test::RerankGolden g = test::load_rerank_golden(std::filesystem::path(FERRITE_SOURCE_DIR) /
                                                        "tests/model/golden/tiny-bert-rerank.json");
  const auto tiny = test::make_tiny_reranker();
  auto model = model::Model::load(tiny->path().string());
  for (int ngl : {runtime::kAllLayers, 1}) {
    for (bool exact : {true, false}) {
      const cuda::test::ProductMode mode(exact);
      runtime::ContextParams cp;
      cp.n_ctx = 256;
      cp.n_batch = 512;
      cp.n_threads = 2;
      cp.n_gpu_layers = ngl;
      runtime::Context ctx(model, cp);
      runtime::Batch batch;
      for (size_t s = 0; s < g.pairs.size(); ++s) {
        const std::vector<int32_t>& t = g.pairs[s].tokens;
        for (size_t i = 0; i < t.size(); ++i) batch.add(t[i], static_cast<int32_t>(i), static_cast<int>(s), true);
      }
      ctx.decode(batch);
      double worst = 0;
      for (size_t s = 0; s < g.pairs.size(); ++s) {
        const std::span<const float> score = ctx.embeddings(static_cast<int>(s));
        ASSERT_EQ(score.size(), 1u);
        worst = std::max(worst, std::fabs(score[0] - g.pairs[s].score_batched));
      }
      const std::string what = std::string("-ngl ") + (ngl < 0 ? "all" : std::to_string(ngl)) +
                               (exact ? ", exact" : ", fast");
      EXPECT_LE(worst, kTol) << what;
      std::printf("  %s: max |score error| %.3g\n", what.c_str(), worst);
    }
  }
}

// Every pair as a sequence of one batch, with its segment ids: the scores.
std::vector<float> typed_scores(const std::shared_ptr<const model::Model>& model,
                                const test::CrossEncoderFixture& f, int ngl) {
  runtime::ContextParams cp;
  cp.n_ctx = 256;
  cp.n_batch = 512;
  cp.n_threads = 2;
  cp.n_gpu_layers = ngl;
  runtime::Context ctx(model, cp);
  runtime::Batch batch;
  for (size_t s = 0; s < f.pairs.size(); ++s) {
    const auto& p = f.pairs[s];
    for (size_t i = 0; i < p.tokens.size(); ++i) {
      batch.add(p.tokens[i], static_cast<int32_t>(i), static_cast<int>(s), true, p.types[i]);
    }
  }
  ctx.decode(batch);
  std::vector<float> out;
  for (size_t s = 0; s < f.pairs.size(); ++s) {
    const std::span<const float> score = ctx.embeddings(static_cast<int>(s));
    EXPECT_EQ(score.size(), 1u);
    out.push_back(score.empty() ? NAN : score[0]);
  }
  return out;
}

TEST(GpuReranker, SegmentIdsMatchTransformers) {
  FERRITE_REQUIRE_GPU();
  const test::CrossEncoderFixture f = test::load_cross_encoder_fixture();
  test::TempDir tmp;
  auto model = model::Model::load(test::convert_cross_encoder(f, tmp));
  const std::vector<float> cpu = typed_scores(model, f, 0);
  for (int ngl : {runtime::kAllLayers, 1}) {
    for (bool exact : {true, false}) {
      const cuda::test::ProductMode mode(exact);
      const std::vector<float> gpu = typed_scores(model, f, ngl);
      double worst = 0, worst_cpu = 0;
      for (size_t s = 0; s < f.pairs.size(); ++s) {
        worst = std::max(worst, std::fabs(gpu[s] - f.pairs[s].score));
        worst_cpu = std::max(worst_cpu, std::fabs(static_cast<double>(gpu[s]) - cpu[s]));
      }
      const std::string what = std::string("-ngl ") + (ngl < 0 ? "all" : std::to_string(ngl)) +
                               (exact ? ", exact" : ", fast");
      EXPECT_LE(worst, kTol) << what;
      EXPECT_LE(worst_cpu, kTol) << what;
      std::printf("  segment ids, %s: max |score - transformers| %.3g, |GPU - CPU| %.3g\n", what.c_str(), worst,
                  worst_cpu);
    }
  }
}

}  // namespace
}  // namespace ferrite
