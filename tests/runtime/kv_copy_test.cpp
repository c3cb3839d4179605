// Context::copy_range (KvCache::copy_cells, the server's prefix cache): a
// sequence given another's first cells goes on as if it had evaluated them
// (the same logits as evaluating the whole prompt in it), f16, f32, bf16
// and q8_0 caches; the copies are its own cells (a context shift of the source
// leaves it alone, which sharing through copy_sequence would not); bad
// requests throw and leave the destination empty.
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "../model/golden.h"
#include "core/error.h"
#include "model/model.h"
#include "runtime/context.h"
#include "support/logits.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

using test::logit_magnitude;
using test::max_abs_diff;
using test::random_tokens;

class KvCopy : public ::testing::TestWithParam<TensorType> {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(model_path, "models/synth/synth-llama-f32.gguf");
    FERRITE_SHARED_FILE(golden_path, "golden/logits/stories260K.p2.json");
    model_ = model::Model::load(model_path.string());
    tokens_ = test::load_golden(golden_path).tokens;
    tokens_.resize(60);
  }
  runtime::ContextParams params() const {
    return {.n_ctx = 256, .n_threads = 2, .cache_type = GetParam(), .cache_type_v = GetParam()};
  }
  std::vector<float> next_logits(runtime::Context& ctx, int seq, int32_t token, int32_t pos) {
    runtime::Batch b;
    b.add(token, pos, seq, true);
    ctx.decode(b);
    return {ctx.logits(0).begin(), ctx.logits(0).end()};
  }
  std::shared_ptr<const model::Model> model_;
  std::vector<int32_t> tokens_;
};

TEST_P(KvCopy, CopiedPrefixGoesOnAsIfEvaluated) {
  const std::span<const int32_t> prefix(tokens_.data(), 40);
  const std::vector<int32_t> rest(tokens_.begin() + 40, tokens_.end());
  // Reference: the whole prompt evaluated in sequence 1 of a fresh context.
  runtime::Context ref(model_, params());
  ref.eval(prefix, 1);
  ref.eval(rest, 1);
  const std::vector<float> want = next_logits(ref, 1, tokens_[3], 60);

  runtime::Context ctx(model_, params());
  ctx.eval(prefix, 0);
  EXPECT_EQ(ctx.copy_range(0, 1, 0, 40), 40);
  EXPECT_EQ(ctx.cache().max_pos(1), 39);
  ctx.eval(rest, 1);
  const std::vector<float> got = next_logits(ctx, 1, tokens_[3], 60);
  ASSERT_EQ(got.size(), want.size());
  // The same cells' values in the same order: only the batches differ (40 +
  // 20 tokens against the reference's 40 + 20 too), so the same bits.
  EXPECT_EQ(max_abs_diff(got, want), 0.0);
}

TEST_P(KvCopy, CopiesAreIndependentOfTheSource) {
  runtime::Context ctx(model_, params());
  const std::span<const int32_t> prefix(tokens_.data(), 40);
  ctx.eval(prefix, 0);
  ctx.copy_range(0, 1, 0, 40);
  const std::vector<float> before = next_logits(ctx, 1, tokens_[41], 40);
  ctx.remove_range(1, 40, -1);
  // The source drops its first 10 tokens and slides the rest back: the copy
  // keeps its positions and values.
  ctx.remove_range(0, 0, 10);
  ctx.shift_sequence(0, 10, -1, -10);
  EXPECT_EQ(ctx.cache().max_pos(0), 29);
  EXPECT_EQ(ctx.cache().max_pos(1), 39);
  const std::vector<float> after = next_logits(ctx, 1, tokens_[41], 40);
  EXPECT_EQ(max_abs_diff(before, after), 0.0);
}

TEST_P(KvCopy, BadRequestsThrowAndCopyNothing) {
  runtime::Context ctx(model_, params());
  ctx.eval(std::span<const int32_t>(tokens_.data(), 20), 0);
  EXPECT_THROW(ctx.copy_range(0, 0, 0, 10), InvalidArgument);         // onto itself
  EXPECT_THROW(ctx.copy_range(0, runtime::kMaxSequences, 0, 10), InvalidArgument);
  EXPECT_THROW(ctx.copy_range(0, 1, 5, 2), InvalidArgument);          // empty the wrong way
  ctx.eval(std::span<const int32_t>(tokens_.data(), 3), 1);
  EXPECT_THROW(ctx.copy_range(0, 1, 0, 10), InvalidArgument);         // 1 holds positions 0..2
  EXPECT_EQ(ctx.cache().max_pos(1), 2);
  EXPECT_EQ(ctx.copy_range(0, 2, 30, 40), 0);                         // nothing there
  EXPECT_EQ(ctx.cache().max_pos(2), -1);
  // Too few free cells: nothing claimed.
  runtime::Context small(model_, {.n_ctx = 32, .n_threads = 2, .cache_type = GetParam(), .cache_type_v = GetParam()});
  small.eval(std::span<const int32_t>(tokens_.data(), 20), 0);
  EXPECT_THROW(small.copy_range(0, 1, 0, 20), InvalidArgument);
  EXPECT_EQ(small.cache().max_pos(1), -1);
  EXPECT_EQ(small.cache().used(), 20);
}

INSTANTIATE_TEST_SUITE_P(CacheTypes, KvCopy,
                         ::testing::Values(TensorType::F16, TensorType::F32, TensorType::BF16, TensorType::Q8_0),
                         [](const auto& info) { return std::string(tensor_type_name(info.param)); });

}  // namespace
}  // namespace ferrite
