// gpt-oss on a tiny random F32 model (ref_gpt_oss.h) against the
// double-precision reference forward: every position's logits of a prompt
// longer than the sliding window, evaluated in one batch, in chunks and one
// token at a time through the KV cache, at every ISA level the host has;
// and checks that the reference without each quirk (attention sinks, the
// sliding window of the even layers, the SwiGLU's clamp) is far from
// ferrite's logits, so that the match shows each of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "cpu/features.h"
#include "model/model.h"
#include "model/ref_gpt_oss.h"
#include "model/single_sequence.h"

namespace ferrite {
namespace {

// As ref_decoders_test.cpp: f32 against double plus f16 rounding flips
// (two layers: within 2e-4 there), 1e-3.
constexpr double kTolerance = 1e-3;
constexpr double kSameComputation = 1e-4;
// A quirk left out of the reference moves some logit by more than this.
constexpr double kQuirkSeen = 0.05;
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
