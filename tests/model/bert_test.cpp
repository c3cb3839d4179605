// bert on a hand-made tiny model against a plain double-precision forward
// written from the architecture's definition (tiny_bert.h): hidden states of
// every token, two sequences in one batch attending only within themselves,
// and the pooling math.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "cpu/thread_pool.h"
#include "model/model.h"
#include "model/pooling.h"
#include "model/tiny_bert.h"

namespace ferrite {
namespace {

// Outputs are LayerNorm'ed (order 1); f32 arithmetic against double, and the
// f16 GELU whose rounding can flip on a last-bit difference of its input.
constexpr double kTolerance = 1e-3;

TEST(Bert, HiddenStatesMatchReferenceForTwoSequencesInOneBatch) {
  test::TinyBert tiny(/*pooling none*/ 0);
  auto model = model::Model::load(tiny.path().string());
  ASSERT_TRUE(model->arch().is_encoder());
  EXPECT_EQ(model->hparams().pooling, model::Pooling::None);
  const std::vector<int32_t> a = {1, 7, 3, 49, 12}, b = {4, 4, 20};
  // Batch: a's tokens then b's, each with its own positions.
  std::vector<int32_t> tokens = a, pos = {0, 1, 2, 3, 4}, seq(a.size(), 0);
  for (size_t i = 0; i < b.size(); ++i) {
    tokens.push_back(b[i]);
    pos.push_back(static_cast<int32_t>(i));
    seq.push_back(1);
  }
  const int64_t n = static_cast<int64_t>(tokens.size()), n_embd = test::TinyBert::kEmbd;
  std::vector<int32_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) rows[i] = static_cast<int32_t>(i);
  model::ForwardBatch fb{tokens.data(), pos.data(), n, rows.data(), n, seq.data()};
  cpu::ThreadPool pool(2);
  model::Workspace ws;
  std::vector<float> states(static_cast<size_t>(n * n_embd));
  model->forward(fb, model::KvView{}, pool, ws, states.data());

  const std::vector<double> ra = tiny.reference(a), rb = tiny.reference(b);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool in_a = i < static_cast<int64_t>(a.size());
    const std::vector<double>& r = in_a ? ra : rb;
    const int64_t j = in_a ? i : i - static_cast<int64_t>(a.size());
    for (int64_t d = 0; d < n_embd; ++d) {
      worst = std::max(worst, std::fabs(states[i * n_embd + d] - r[j * n_embd + d]));
    }
  }
  EXPECT_LE(worst, kTolerance);
  std::printf("  max |state error| %.3g\n", worst);
}

TEST(Bert, RejectsPositionBeyondTrainedContext) {
  test::TinyBert tiny(0);
  auto model = model::Model::load(tiny.path().string());
  const int32_t token = 1, position = static_cast<int32_t>(test::TinyBert::kCtx), row = 0;
  model::ForwardBatch fb{&token, &position, 1, &row, 1, nullptr};
  cpu::ThreadPool pool(1);
  model::Workspace ws;
  std::vector<float> states(test::TinyBert::kEmbd);
  EXPECT_THROW(model->forward(fb, model::KvView{}, pool, ws, states.data()), InvalidArgument);
}

TEST(Bert, UnsupportedPoolingTypeIsAModelError) {
  test::TinyBert tiny(/*rank*/ 4);
  EXPECT_THROW(model::Model::load(tiny.path().string()), ModelError);
}

TEST(Pooling, MeanClsLastOfRowsInOrder) {
  constexpr int64_t kRows = 5, kEmbd = 3;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> states(kRows * kEmbd);
  for (float& v : states) v = u(rng);
  const std::vector<int32_t> rows = {4, 1, 2};  // a sequence's rows in position order
  std::vector<float> out(kEmbd);
  model::pool_sequence(model::Pooling::Mean, states.data(), rows.data(), 3, kEmbd, out.data());
  for (int64_t d = 0; d < kEmbd; ++d) {
    const double mean = (double{states[4 * kEmbd + d]} + states[1 * kEmbd + d] + states[2 * kEmbd + d]) / 3.0;
    EXPECT_NEAR(out[d], mean, 1e-6);
  }
  model::pool_sequence(model::Pooling::Cls, states.data(), rows.data(), 3, kEmbd, out.data());
  for (int64_t d = 0; d < kEmbd; ++d) EXPECT_EQ(out[d], states[4 * kEmbd + d]);
  model::pool_sequence(model::Pooling::Last, states.data(), rows.data(), 3, kEmbd, out.data());
  for (int64_t d = 0; d < kEmbd; ++d) EXPECT_EQ(out[d], states[2 * kEmbd + d]);
  EXPECT_THROW(model::pool_sequence(model::Pooling::None, states.data(), rows.data(), 3, kEmbd, out.data()),
               InvalidArgument);
  EXPECT_THROW(model::pool_sequence(model::Pooling::Mean, states.data(), rows.data(), 0, kEmbd, out.data()),
               InvalidArgument);
}

}  // namespace
}  // namespace ferrite
