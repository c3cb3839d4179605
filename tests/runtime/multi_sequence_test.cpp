// Several sequences in one cache: each token attends only to the span of
// cells its sequence occupies (Context::decode_pass), and the cache keeps a
// sequence's cells together (KvCache::allocate). A sequence decoded next to
// others must give the logits it gives alone.
#include <cmath>

#include <gtest/gtest.h>

#include "../model/golden.h"
#include "model/model.h"
#include "runtime/context.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

constexpr int kSeqs = 3;
constexpr int kSteps = 6;
// Same arithmetic on the same cells (relative to the sequence's span); only
// the matrix products see batches of a different size, whose kernels may sum
// in another order: f32 rounding, amplified a little by the model.
constexpr double kMultiSeqTol = 1e-4;

class MultiSequence : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
    FERRITE_SHARED_FILE(golden_path, "golden/logits/stories260K.p2.json");
    model_ = model::Model::load(model_path.string());
    tokens_ = test::load_golden(golden_path).tokens;
  }
  // Prompt of sequence s: a slice of the golden prompt of its own length.
  std::vector<int32_t> prompt(int s) const {
    return {tokens_.begin() + 10 * s, tokens_.begin() + 10 * s + 20 + 7 * s};
  }
  int32_t step_token(int s, int i) const { return tokens_[static_cast<size_t>(100 + 10 * s + i)]; }

  std::shared_ptr<const model::Model> model_;
  std::vector<int32_t> tokens_;
};

TEST_F(MultiSequence, InterleavedDecodeEqualsEachAlone) {
  const runtime::ContextParams p{.n_ctx = 256, .n_threads = 2};
  // Each sequence alone: logits after every decode step.
  std::vector<std::vector<std::vector<float>>> alone(kSeqs);
  for (int s = 0; s < kSeqs; ++s) {
    runtime::Context ctx(model_, p);
    ctx.eval(prompt(s));
    for (int i = 0; i < kSteps; ++i) {
      const int32_t t = step_token(s, i);
      const auto l = ctx.eval({&t, 1});
      alone[static_cast<size_t>(s)].emplace_back(l.begin(), l.end());
    }
  }
  // All together: prompts one after the other, then one batch per step
  // holding a token of every sequence.
  runtime::Context ctx(model_, p);
  for (int s = 0; s < kSeqs; ++s) ctx.eval(prompt(s), s);
  for (int i = 0; i < kSteps; ++i) {
    runtime::Batch b;
    for (int s = 0; s < kSeqs; ++s) {
      b.add(step_token(s, i), static_cast<int32_t>(prompt(s).size()) + i, s, true);
    }
    ctx.decode(b);
    for (int s = 0; s < kSeqs; ++s) {
      const auto got = ctx.logits(s);
      const std::vector<float>& want = alone[static_cast<size_t>(s)][static_cast<size_t>(i)];
      double scale = 0;
      for (float v : want) scale = std::max(scale, std::fabs(static_cast<double>(v)));
      for (size_t j = 0; j < want.size(); ++j) {
        ASSERT_NEAR(got[j], want[j], kMultiSeqTol * scale) << "sequence " << s << " step " << i << " logit " << j;
      }
    }
  }
  // The sequences' cells do not interleave: each occupies one run of cells.
  for (int s = 0; s < kSeqs; ++s) {
    int64_t lo = -1, hi = -1, n = 0;
    for (int64_t c = 0; c < ctx.cache().size(); ++c) {
      if (ctx.cache().cell(c).pos < 0 || !ctx.cache().cell(c).has(s)) continue;
      if (lo < 0) lo = c;
      hi = c + 1;
      ++n;
    }
    EXPECT_EQ(hi - lo, n) << "sequence " << s;
    EXPECT_EQ(n, static_cast<int64_t>(prompt(s).size()) + kSteps);
  }
}

// A sequence removed and re-added, and a sequence that outgrows its region
// (cells interleave with a neighbour's): still the same logits as alone.
TEST_F(MultiSequence, CrowdedCacheStillCorrect) {
  const runtime::ContextParams p{.n_ctx = 96, .n_threads = 2};
  runtime::Context alone(model_, p);
  const std::vector<int32_t> a = prompt(2);  // 34 tokens
  const auto ref_span = alone.eval(a);
  const std::vector<float> ref(ref_span.begin(), ref_span.end());

  runtime::Context ctx(model_, p);
  ctx.eval(prompt(0), 0);  // 20 cells at the start
  ctx.eval(prompt(1), 1);  // a region in the middle of the free cells
  ctx.clear(0);
  // Sequence 2 grows in pieces past sequence 1's cells.
  for (size_t i = 0; i < a.size(); i += 9) {
    const std::vector<int32_t> piece(a.begin() + static_cast<std::ptrdiff_t>(i),
                                     a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), i + 9)));
    const auto got = ctx.eval(piece, 2);
    if (i + 9 >= a.size()) {
      double scale = 0;
      for (float v : ref) scale = std::max(scale, std::fabs(static_cast<double>(v)));
      for (size_t j = 0; j < ref.size(); ++j) ASSERT_NEAR(got[j], ref[j], kMultiSeqTol * scale) << j;
    }
  }
}

}  // namespace
}  // namespace ferrite
