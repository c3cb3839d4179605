// llama4 (tiny_llama4.h) against the double-precision reference forward
// written from the published definition (ref_llama4.h): the prompt of 28
// tokens (three and a half chunks of 8) in one pass and in passes of 7 and
// 5 (passes that cross chunk boundaries), every logit within 1e-3. Each
// quirk is shown to matter: the reference without it misses ferrite's
// logits by more than 0.05. The comparison with ik_llama.cpp 8337e4c's
// logits (GoldenLlama4 below) waits for its golden: see there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <vector>

#include "core/error.h"
#include "golden.h"
#include "model/model.h"
#include "model/ref_llama4.h"
#include "model/single_sequence.h"

namespace ferrite {
namespace {

constexpr double kTolerance = 1e-3;
constexpr double kIkTolerance = 3e-3;
constexpr double kQuirkSeen = 0.05;

std::vector<float> eval(const model::Model& m, const std::vector<int32_t>& tokens, int64_t n_batch) {
  test::SingleSequence seq(m, 64, 2);
  return seq.eval(tokens, n_batch);
}

double max_abs_diff(const std::vector<float>& got, const test::ref::Rows& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
  }
  return worst;
}

TEST(RefLlama4, LogitsMatchReference) {
  for (int64_t k_used : {int64_t{1}, int64_t{2}}) {
    test::Llama4Config c;
    c.n_expert_used = k_used;
    const auto tiny = test::make_tiny_llama4(c);
    auto m = model::Model::load(tiny->path().string());
    const std::vector<int32_t> tokens = test::tiny_llama4_prompt();
    const test::ref::Rows want = test::RefLlama4(c, *tiny).logits(tokens);
    for (int64_t n_batch : {int64_t{512}, int64_t{7}, int64_t{5}}) {
      const double err = max_abs_diff(eval(*m, tokens, n_batch), want);
      EXPECT_LE(err, kTolerance) << "top-" << k_used << ", batch " << n_batch;
      std::printf("  top-%lld, batch %lld: max |logit error| %.3g\n", static_cast<long long>(k_used),
                  static_cast<long long>(n_batch), err);
    }
  }
}

TEST(RefLlama4, EachQuirkMatters) {
  const test::Llama4Config c;
  const auto tiny = test::make_tiny_llama4(c);
  auto m = model::Model::load(tiny->path().string());
  const std::vector<int32_t> tokens = test::tiny_llama4_prompt();
  const std::vector<float> got = eval(*m, tokens, 512);
  struct Off {
    bool test::Llama4Quirks::*flag;
    const char* what;
  };
  for (const Off& off : {Off{&test::Llama4Quirks::chunked, "chunked attention"},
                         Off{&test::Llama4Quirks::nope, "NoPE layers (RoPE on every layer)"},
                         Off{&test::Llama4Quirks::temperature, "attention temperature"},
                         Off{&test::Llama4Quirks::qk_norm, "q/k norm after RoPE"},
                         Off{&test::Llama4Quirks::weight_before, "router weight on the experts' input"},
                         Off{&test::Llama4Quirks::shared_expert, "shared expert"}}) {
    test::Llama4Quirks q;
    q.*off.flag = false;
    const double diff = max_abs_diff(got, test::RefLlama4(c, *tiny, q).logits(tokens));
    EXPECT_GT(diff, kQuirkSeen) << "the reference without the " << off.what << " still matches";
    std::printf("  without the %s: max |logit difference| %.3g\n", off.what, diff);
  }
}

// Maverick's 128 experts turn the q/k norm off (llama.cpp's rule); the
// reference with it then misses.
TEST(RefLlama4, NoQkNormWith128Experts) {
  test::Llama4Config c;
  c.n_expert = 128;
  c.n_ff_exp = 8;
  const auto tiny = test::make_tiny_llama4(c);
  auto m = model::Model::load(tiny->path().string());
  const std::vector<int32_t> tokens = test::tiny_llama4_prompt();
  const std::vector<float> got = eval(*m, tokens, 512);
  EXPECT_LE(max_abs_diff(got, test::RefLlama4(c, *tiny).logits(tokens)), kTolerance);
}

TEST(RefLlama4, RefusesBadSettings) {
  for (int which : {0, 1}) {
    test::Llama4Config c;
    if (which == 0) c.moe_step = 0;
    if (which == 1) c.temp_floor = 0.0f;
    const auto tiny = test::make_tiny_llama4(c);
    EXPECT_THROW((void)model::Model::load(tiny->path().string()), ModelError) << "case " << which;
  }
}

// The file of ik_llama.cpp's golden: no expert layers (interleave step 8;
// ik_llama.cpp 8337e4c's llama4 expert layers add the normed input in place
// of the residual: llm_build_moe_ffn's add_input) and expert_count 128 (it
// never norms q and k: its RoPE layers go through build_std_attention
// without the L2 norm). Its chunk (8) and temperature floor (4) are fixed
// in ik_llama.cpp (8192); the dumper (outside the repository) sets them in
// the loaded model's hparams. What it checks: chunked attention, the NoPE
// layer with its temperature, RoPE, GQA, the dense layers.
test::Llama4Config golden_config() {
  test::Llama4Config c;
  c.n_expert = 128;
  c.moe_step = 8;
  c.seed = 44011;
  return c;
}

// Writes that file for the golden dumper.
TEST(GoldenLlama4, DISABLED_Write) {
  const char* out = std::getenv("FERRITE_TINY_OUT");
  ASSERT_NE(out, nullptr) << "set FERRITE_TINY_OUT";
  const auto tiny = test::make_tiny_llama4(golden_config());
  std::filesystem::copy_file(tiny->path(), std::filesystem::path(out) / "tiny-llama4.gguf",
                             std::filesystem::copy_options::overwrite_existing);
}

// ik_llama.cpp's logits: ferrite (one pass, passes of 7) and the reference
// each within kIkTolerance; the reference without chunking or without the
// temperature misses them. The golden (tests/model/golden/llama4.ik.json) comes
// from a golden_dump variant built against ik_llama.cpp 8337e4c's libraries
// (outside the repository) that sets the hparams ik fixes in code on the
// loaded model (--l4-chunk/--l4-temp-floor/--l4-temp-scale):
//   FERRITE_TINY_OUT=/tmp build/tests/test_model --gtest_also_run_disabled_tests
//     --gtest_filter=GoldenLlama4.DISABLED_Write
//   golden_dump_llama4 -m /tmp/tiny-llama4.gguf --no-bos -t 2 --l4-chunk 8 --l4-temp-floor 4
//     --l4-temp-scale 0.5 -i <tiny_llama4_prompt()> > tests/model/golden/llama4.ik.json
TEST(GoldenLlama4, MatchesIkLlama) {
  const test::Llama4Config c = golden_config();
  const auto tiny = test::make_tiny_llama4(c);
  auto m = model::Model::load(tiny->path().string());
  const test::Golden g =
      test::load_golden(std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden/llama4.ik.json");
  ASSERT_EQ(g.tokens, test::tiny_llama4_prompt()) << "the golden was made for other tokens";
  ASSERT_EQ(g.positions.size(), g.tokens.size());
  const size_t nv = static_cast<size_t>(m->hparams().n_vocab);
  auto error = [&](const std::vector<float>& logits) {
    double err = 0;
    for (size_t i = 0; i < g.tokens.size(); ++i) {
      err = std::max(err, test::max_logit_error(std::span<const float>(logits.data() + i * nv, nv), g.positions[i]));
    }
    return err;
  };
  auto as_float = [](const test::ref::Rows& r) { return std::vector<float>(r.begin(), r.end()); };
  const double ref_err = error(as_float(test::RefLlama4(c, *tiny).logits(g.tokens)));
  EXPECT_LE(ref_err, kIkTolerance) << "the reference against ik_llama.cpp";
  for (int64_t n_batch : {int64_t{512}, int64_t{7}}) {
    const double err = error(eval(*m, g.tokens, n_batch));
    EXPECT_LE(err, kIkTolerance) << "batch " << n_batch;
    std::printf("  batch %lld: max |logit error| %.3g (reference: %.3g)\n", static_cast<long long>(n_batch), err,
                ref_err);
  }
  for (bool test::Llama4Quirks::*off : {&test::Llama4Quirks::chunked, &test::Llama4Quirks::temperature}) {
    test::Llama4Quirks q;
    q.*off = false;
    const double err = error(as_float(test::RefLlama4(c, *tiny, q).logits(g.tokens)));
    EXPECT_GT(err, kQuirkSeen) << "the golden does not tell a quirk apart";
    std::printf("  the reference without a quirk: %.3g\n", err);
  }
}

}  // namespace
}  // namespace ferrite
