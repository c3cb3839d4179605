// A context shift on an ALiBi model (bloom, model/gpt_style.h): keys carry
// no position, so shifting a sequence moves its cells' positions only and
// rotates nothing; the distances ALiBi biases by are unchanged, and the next
// token's logits equal those without the shift.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/model.h"
#include "model/tiny_gpt.h"
#include "runtime/context.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

TEST(AlibiShift, ShiftedSequenceGivesTheSameNextLogits) {
  FERRITE_SHARED_FILE(vocab, "vocab/ggml-vocab-llama-spm.gguf");
  const test::TinyGpt tiny(test::tiny_gpt_config("bloom"), vocab);
  auto model = model::Model::load(tiny.path().string());
  ASSERT_GT(model->hparams().max_alibi_bias, 0.0f);
  const std::vector<int32_t> prompt = {1, 45, 300, 17, 99, 210, 8, 77, 400, 123, 5, 61};
  const std::vector<int32_t> next = {250};
  runtime::ContextParams cp;
  cp.n_ctx = 64;
  cp.n_threads = 2;
  runtime::Context plain(model, cp), shifted(model, cp);
  plain.eval(prompt);
  const std::span<const float> a = plain.eval(next);
  shifted.eval(prompt);
  shifted.shift_sequence(0, 0, -1, 9);  // positions 0..11 become 9..20
  const std::span<const float> b = shifted.eval(next);  // at position 21
  ASSERT_EQ(a.size(), b.size());
  double worst = 0, spread = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
    spread = std::max(spread, static_cast<double>(std::fabs(a[i] - a[0])));
  }
  EXPECT_LE(worst, 1e-6);
  EXPECT_GT(spread, 0.1);  // logits that say something
}

}  // namespace
}  // namespace ferrite
