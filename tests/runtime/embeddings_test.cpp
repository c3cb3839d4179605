// The Context's path for encoders: two sequences encoded in one batch,
// pooled mean / cls / last, against a plain double-precision bert forward
// of each sequence alone (tests/model/tiny_bert.h).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "model/model.h"
#include "model/tiny_bert.h"
#include "runtime/context.h"

namespace ferrite {
namespace {

constexpr double kTolerance = 1e-3;  // LayerNorm'ed outputs of order 1, f32 vs double
constexpr int64_t kEmbd = test::TinyBert::kEmbd;

// Pooled reference of one sequence's states [n, kEmbd].
std::vector<double> pool_ref(uint32_t pooling, const std::vector<double>& states) {
  const int64_t n = static_cast<int64_t>(states.size()) / kEmbd;
  std::vector<double> out(kEmbd, 0.0);
  for (int64_t d = 0; d < kEmbd; ++d) {
    if (pooling == 1) {
      for (int64_t i = 0; i < n; ++i) out[d] += states[i * kEmbd + d] / static_cast<double>(n);
    } else {
      out[d] = states[(pooling == 2 ? 0 : n - 1) * kEmbd + d];
    }
  }
  return out;
}

class ContextEmbeddings : public ::testing::TestWithParam<uint32_t> {};

TEST_P(ContextEmbeddings, PooledPerSequenceMatchesReference) {
  const uint32_t pooling = GetParam();
  test::TinyBert tiny(pooling);
  runtime::Context ctx(model::Model::load(tiny.path().string()), {.n_ctx = 64, .n_threads = 2});
  const std::vector<int32_t> a = {2, 9, 31, 5}, b = {17, 3, 3, 40, 8, 1};
  // Interleaved on purpose: a sequence's rows need not be contiguous.
  runtime::Batch batch;
  for (size_t i = 0; i < b.size(); ++i) {
    if (i < a.size()) batch.add(a[i], static_cast<int32_t>(i), 3, true);
    batch.add(b[i], static_cast<int32_t>(i), 5, true);
  }
  ctx.decode(batch);
  for (const auto& [seq, tokens] : {std::pair{3, a}, std::pair{5, b}}) {
    const std::vector<double> want = pool_ref(pooling, tiny.reference(tokens));
    const std::span<const float> got = ctx.embeddings(seq);
    ASSERT_EQ(got.size(), static_cast<size_t>(kEmbd));
    for (int64_t d = 0; d < kEmbd; ++d) EXPECT_NEAR(got[d], want[d], kTolerance) << "sequence " << seq;
  }
  EXPECT_THROW(ctx.embeddings(0), InvalidArgument);  // not in the batch
}

INSTANTIATE_TEST_SUITE_P(MeanClsLast, ContextEmbeddings, ::testing::Values(1u, 2u, 3u));

TEST(ContextEmbeddings, PoolingNoneGivesTokenStates) {
  test::TinyBert tiny(0);
  runtime::Context ctx(model::Model::load(tiny.path().string()), {.n_ctx = 64, .n_threads = 1});
  const std::vector<int32_t> a = {6, 7, 8};
  runtime::Batch batch;
  for (size_t i = 0; i < a.size(); ++i) batch.add(a[i], static_cast<int32_t>(i), 0, true);
  ctx.decode(batch);
  const std::vector<double> want = tiny.reference(a);
  for (int64_t i = 0; i < 3; ++i) {
    const std::span<const float> got = ctx.token_embeddings(i);
    for (int64_t d = 0; d < kEmbd; ++d) EXPECT_NEAR(got[d], want[i * kEmbd + d], kTolerance);
  }
  EXPECT_THROW(ctx.embeddings(0), InvalidArgument);
  EXPECT_THROW(ctx.token_embeddings(3), InvalidArgument);
}

TEST(ContextEmbeddings, BatchLargerThanOnePassIsRejected) {
  test::TinyBert tiny(1);
  runtime::Context ctx(model::Model::load(tiny.path().string()), {.n_ctx = 64, .n_batch = 2, .n_threads = 1});
  runtime::Batch batch;
  for (int32_t i = 0; i < 3; ++i) batch.add(1, i, 0, true);
  EXPECT_THROW(ctx.decode(batch), InvalidArgument);
}

}  // namespace
}  // namespace ferrite
