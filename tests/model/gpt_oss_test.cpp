// gpt-oss on a tiny random F32 model (ref_gpt_oss.h) against the
// double-precision reference forward: every position's logits of a prompt
// longer than the sliding window, evaluated in one batch, in chunks and one
// token at a time through the KV cache, at every ISA level the host has;
// and checks that the reference without each quirk (attention sinks, the
// sliding window of the even layers, the SwiGLU's clamp) is far from
// ferrite's logits, so that the match shows each of them.
// GoldenGptOss: the same model against ik_llama.cpp 8337e4c's logits
// (tests/model/golden/gpt-oss.p<N>.json: top-20 and log-sum-exp per position,
// golden_dump's numbers), and the reference against them too.
// Regenerating those goldens (ik_llama.cpp built outside the repository):
//   build/tests/test_model --gtest_also_run_disabled_tests
//       --gtest_filter='RefGptOss.DISABLED_Write' with FERRITE_TINY_OUT=DIR
//   golden-ik/golden_dump -m DIR/tiny-gpt-oss.gguf -i <tiny_family_prompt(N)'s ids> --no-bos > gpt-oss.pN.json
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cpu/features.h"
#include "golden.h"
#include "model/model.h"
#include "model/ref_gpt_oss.h"
#include "model/single_sequence.h"

namespace ferrite {
namespace {

// As ref_decoders_test.cpp: f32 against double plus f16 rounding flips
// (two layers: within 2e-4 there), 1e-3.
constexpr double kTolerance = 1e-3;
constexpr double kSameComputation = 1e-4;
// ik_llama.cpp's logits sit 1.1e-3 to 1.4e-3 (max over positions; measured)
// from both ferrite's and the double-precision reference's, which agree with
// each other to 4e-5; the gap is already 7e-4 at position 0, where attention
// sees one cell, and spread over every position (2e-4 to 1.4e-3): some
// rounding inside ik_llama.cpp's own arithmetic (its f32 products or fused
// expert path; not traced). Each quirk moves the logits by 2.6 or more.
constexpr double kIkTolerance = 2e-3;
// A quirk left out of the reference moves some logit by more than this.
constexpr double kQuirkSeen = 0.05;
// The rounding of YaRN's correction range (high 5.66 or 6 of 64 dimensions
// here) moves some logit by more than this.
constexpr double kYarnRoundingSeen = 1e-3;
constexpr int64_t kCtx = 64;
constexpr int kThreads = 2;

template <class A, class B>
double max_abs_diff(const A& a, const B& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  }
  return worst;
}

std::vector<float> eval(const model::Model& m, const std::vector<int32_t>& tokens, int64_t n_batch) {
  test::SingleSequence seq(m, kCtx, kThreads);
  return seq.eval(tokens, n_batch);
}

TEST(RefGptOss, LogitsMatchReference) {
  test::TinyGptOss tiny(test::GptOssConfig{});
  const std::vector<int32_t> tokens = test::tiny_family_prompt(1);  // 24 tokens: 4 windows
  const test::ref::Rows expected = tiny.reference(tokens);
  const int64_t n = static_cast<int64_t>(tokens.size());
  const cpu::Isa before = cpu::active_isa();
  // Every level this host has (a level it lacks is clamped to another: skipped).
  for (cpu::Isa isa : {cpu::Isa::Scalar, cpu::Isa::Neon, cpu::Isa::NeonI8mm, cpu::Isa::Avx2, cpu::Isa::Avx512}) {
    if (cpu::set_isa(isa) != isa) continue;
    SCOPED_TRACE(cpu::isa_name(isa));
    auto m = model::Model::load(tiny.path().string());  // repacked for this level
    EXPECT_EQ(m->hparams().arch, "gpt-oss");
    const std::vector<float> batched = eval(*m, tokens, n);
    const double err = max_abs_diff(batched, expected);
    EXPECT_LE(err, kTolerance) << "batched logits against the reference";
    EXPECT_LE(max_abs_diff(eval(*m, tokens, 5), batched), kSameComputation) << "chunks of 5";
    EXPECT_LE(max_abs_diff(eval(*m, tokens, 1), batched), kSameComputation) << "one token at a time";
    std::printf("  %s: max |logit error| %.3g\n", cpu::isa_name(isa).c_str(), err);
  }
  cpu::set_isa(before);
}

// Each quirk changes the logits far beyond the tolerance: the reference
// without it misses ferrite's logits.
TEST(RefGptOss, EachQuirkIsSeen) {
  test::TinyGptOss tiny(test::GptOssConfig{});
  const std::vector<int32_t> tokens = test::tiny_family_prompt(1);
  auto m = model::Model::load(tiny.path().string());
  const std::vector<float> got = eval(*m, tokens, static_cast<int64_t>(tokens.size()));
  struct Off {
    bool test::GptOssConfig::*flag;
    bool value;  // the changed setting
    const char* what;
  };
  for (const Off& off : {Off{&test::GptOssConfig::ref_sinks, false, "attention sinks"},
                         Off{&test::GptOssConfig::ref_sliding, false, "sliding window on even layers"},
                         Off{&test::GptOssConfig::ref_sliding_odd, true, "window on the even layers (odd instead)"},
                         Off{&test::GptOssConfig::ref_clamp, false, "SwiGLU clamp"}}) {
    tiny.config().*off.flag = off.value;
    const double diff = max_abs_diff(got, tiny.reference(tokens));
    tiny.config().*off.flag = !off.value;
    EXPECT_GT(diff, kQuirkSeen) << "the reference without the " << off.what << " still matches";
    std::printf("  without the %s: max |logit difference| %.3g\n", off.what, diff);
  }
}

// YaRN's correction range as the file says: rounded out to whole pairs
// (rope.scaling.yarn_truncate true, llama.cpp's computation), fractional
// (false: transformers' truncate false), and fractional without the key (as
// gpt-oss was trained; llama.cpp's converter writes no key). The reference
// with the other rounding misses ferrite's logits.
TEST(RefGptOss, YarnRangeAsTheFileSays) {
  const std::vector<int32_t> tokens = test::tiny_family_prompt(1);
  for (const std::optional<bool> key : {std::optional<bool>(true), std::optional<bool>(false), std::optional<bool>()}) {
    const std::string what = key ? (*key ? "yarn_truncate true" : "yarn_truncate false") : "no yarn_truncate key";
    test::GptOssConfig c;
    c.yarn_truncate = key;
    test::TinyGptOss tiny(c);
    auto m = model::Model::load(tiny.path().string());
    EXPECT_EQ(m->hparams().rope.yarn_truncate, key.value_or(false)) << what;
    const std::vector<float> got = eval(*m, tokens, static_cast<int64_t>(tokens.size()));
    const double err = max_abs_diff(got, tiny.reference(tokens));
    EXPECT_LE(err, kTolerance) << what;
    tiny.config().ref_other_rounding = true;
    const double other = max_abs_diff(got, tiny.reference(tokens));
    EXPECT_GT(other, kYarnRoundingSeen) << what << ": the other rounding matches as well";
    std::printf("  %s: max |logit error| %.3g, against the other rounding %.3g\n", what.c_str(), err, other);
  }
}

// Writes the tiny model for the ik_llama.cpp golden dumper (see the top).
TEST(RefGptOss, DISABLED_Write) {
  const char* out = std::getenv("FERRITE_TINY_OUT");
  ASSERT_NE(out, nullptr) << "set FERRITE_TINY_OUT";
  test::TinyGptOss tiny(test::GptOssConfig{});
  std::filesystem::copy_file(tiny.path(), std::filesystem::path(out) / "tiny-gpt-oss.gguf",
                             std::filesystem::copy_options::overwrite_existing);
}

// ik_llama.cpp's logits: ferrite (the prompt in one pass and in passes of 7)
// and the double-precision reference each within kIkTolerance.
TEST(GoldenGptOss, MatchesIkLlama) {
  test::TinyGptOss tiny(test::GptOssConfig{});
  auto m = model::Model::load(tiny.path().string());
  for (int prompt : {1, 2}) {
    const test::Golden g = test::load_golden(std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden" /
                                             ("gpt-oss.p" + std::to_string(prompt) + ".json"));
    ASSERT_EQ(g.tokens, test::tiny_family_prompt(prompt)) << "the golden was made for other tokens";
    ASSERT_EQ(g.positions.size(), g.tokens.size());
    const size_t nv = static_cast<size_t>(m->hparams().n_vocab);
    const test::ref::Rows ref = tiny.reference(g.tokens);
    double ref_err = 0;
    for (size_t i = 0; i < g.tokens.size(); ++i) {
      const std::vector<float> row(ref.begin() + static_cast<std::ptrdiff_t>(i * nv),
                                   ref.begin() + static_cast<std::ptrdiff_t>((i + 1) * nv));
      ref_err = std::max(ref_err, test::max_logit_error(std::span<const float>(row), g.positions[i]));
    }
    EXPECT_LE(ref_err, kIkTolerance) << "the reference against ik_llama.cpp, p" << prompt;
    for (int64_t n_batch : {int64_t{512}, int64_t{7}}) {
      const std::vector<float> logits = eval(*m, g.tokens, n_batch);
      double err = 0;
      for (size_t i = 0; i < g.tokens.size(); ++i) {
        err = std::max(err, test::max_logit_error(std::span<const float>(logits.data() + i * nv, nv), g.positions[i]));
      }
      EXPECT_LE(err, kIkTolerance) << "p" << prompt << ", batch " << n_batch;
      std::printf("  p%d batch %lld: max |logit error| %.3g (reference: %.3g)\n", prompt,
                  static_cast<long long>(n_batch), err, ref_err);
    }
  }
}

// The sliding window is required (ik_llama.cpp requires the key too).
TEST(RefGptOss, RefusesFileWithoutWindow) {
  test::GptOssConfig c;
  c.window = 0;
  test::TinyGptOss tiny(c);
  try {
    (void)model::Model::load(tiny.path().string());
    ADD_FAILURE() << "loaded a gpt-oss file without attention.sliding_window";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("sliding_window"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ferrite
