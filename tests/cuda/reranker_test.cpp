// The tiny bert reranker (tests/model/tiny_reranker.h) on the GPU against
// llama.cpp c392e50's scores (tests/model/golden/tiny-bert-rerank.json): every
// layer on the GPU (the classification head then runs there, through the same
// operations as on the CPU: gather_rows, linear, softcap as tanh) and only the
// last one, every pair as a sequence of one batch, in the exact and the fast
// arithmetic, within the CPU test's bound 1e-3 (the encoders' attention is
// f32 in both).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ferrite
