// Context::copy_range with the cache on the GPU (CudaBackend::copy_cached_cells),
// every layer offloaded and the first one on the CPU: a sequence given
// another's first cells goes on as if it had evaluated them (as on the CPU,
// tests/runtime/kv_copy_test.cpp), and stays apart from the source's shift.
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "model/model.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "support/logits.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

using test::logit_magnitude;
using test::max_abs_diff;
using test::random_tokens;

std::vector<float> next_logits(runtime::Context& ctx, int seq, int32_t token, int32_t pos) {
  runtime::Batch b;
  b.add(token, pos, seq, true);
  ctx.decode(b);
  return {ctx.logits(0).begin(), ctx.logits(0).end()};
}

class GpuKvCopy : public ::testing::TestWithParam<int> {};

TEST_P(GpuKvCopy, CopiedPrefixGoesOnAsIfEvaluated) {
  FERRITE_SHARED_FILE(path, "models/synth/synth-llama-f32.gguf");
  auto model = model::Model::load(path.string());
  std::vector<int32_t> tokens(60);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(3 + (i * 7919) % 4000);
  const std::span<const int32_t> prefix(tokens.data(), 40), rest(tokens.data() + 40, 20);
  const runtime::ContextParams cp{.n_ctx = 256, .n_threads = 2, .n_gpu_layers = GetParam()};
  runtime::Context ref(model, cp);
  ref.eval(prefix, 1);
  ref.eval(rest, 1);
  const std::vector<float> want = next_logits(ref, 1, tokens[3], 60);

  runtime::Context ctx(model, cp);
  ctx.eval(prefix, 0);
  ASSERT_EQ(ctx.copy_range(0, 1, 0, 40), 40);
  ctx.eval(rest, 1);
  const std::vector<float> got = next_logits(ctx, 1, tokens[3], 60);
  EXPECT_EQ(max_abs_diff(got, want), 0.0);

  // The source shifts; the copy's next logits do not move.
  ctx.remove_range(1, 40, -1);
  const std::vector<float> before = next_logits(ctx, 1, tokens[41], 40);
  ctx.remove_range(1, 40, -1);
  ctx.remove_range(0, 0, 10);
  ctx.shift_sequence(0, 10, -1, -10);
  EXPECT_EQ(max_abs_diff(next_logits(ctx, 1, tokens[41], 40), before), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Offload, GpuKvCopy, ::testing::Values(runtime::kAllLayers, 1));

}  // namespace
}  // namespace ferrite
