// phimoe (Phi-3.5-MoE) on the tiny file of tiny_families.h against the
// double-precision reference of transformers' definition (ref_phimoe.h):
// LayerNorms, sparsemixer routing with the router jitter (Phi-3.5-MoE's
// 0.01 when the file has no phimoe.router_jitter_noise), the sliding window.
// Both prompts of tiny_family_prompt, in one pass, in passes of 7 tokens and
// one token at a time, every logit within 1e-3 (ref_decoders_test.cpp's
// bound for two-layer models). Each part of the definition is shown to
// matter: the reference without it misses ferrite's logits by more than
// kPartSeen. llama.cpp c392e50's goldens for this file
// (tests/model/golden/phimoe.p*.json, its RMSNorms and renormalised softmax
// top 2, no window) are shown to miss the definition: they are why phimoe
// left tests/model/golden_families_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/golden.h"
#include "model/model.h"
#include "model/ref_phimoe.h"
#include "model/single_sequence.h"

namespace ferrite {
namespace {

constexpr double kTolerance = 1e-3;
constexpr double kPartSeen = 0.05;

std::vector<float> eval(const std::filesystem::path& path, const std::vector<int32_t>& tokens, int64_t n_batch) {
  auto m = model::Model::load(path.string());
  test::SingleSequence seq(*m, 64, 2);
  return seq.eval(tokens, n_batch);
}

double max_diff(const std::vector<float>& a, const test::ref::Rows& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return worst;
}

TEST(RefPhimoe, LogitsMatchReference) {
  const auto tiny = test::make_tiny_family("phimoe");
  const test::RefPhimoe ref(*tiny);
  for (int prompt : {1, 2}) {
    const std::vector<int32_t> tokens = test::tiny_family_prompt(prompt);
    const test::ref::Rows expected = ref.logits(tokens);
    for (int64_t n_batch : {int64_t{512}, int64_t{7}, int64_t{1}}) {
      const double err = max_diff(eval(tiny->path(), tokens, n_batch), expected);
      EXPECT_LE(err, kTolerance) << "p" << prompt << ", batch " << n_batch;
      std::printf("  p%d (batch %lld): max |logit error| %.3g\n", prompt, static_cast<long long>(n_batch), err);
    }
  }
}

TEST(RefPhimoe, EachPartOfTheDefinitionMatters) {
  const auto tiny = test::make_tiny_family("phimoe");
  const std::vector<int32_t> tokens = test::tiny_family_prompt(1);
  const std::vector<float> got = eval(tiny->path(), tokens, 512);
  struct Part {
    const char* name;
    void (*change)(test::RefPhimoe&);
  };
  const Part parts[] = {
      {"RMSNorms instead of LayerNorms", [](test::RefPhimoe& r) { r.rms_norms = true; }},
      {"softmax top 2, renormalised", [](test::RefPhimoe& r) { r.softmax_top2 = true; }},
      {"no sliding window", [](test::RefPhimoe& r) { r.window = 0; }},
      {"llama.cpp c392e50's definition (all three)",
       [](test::RefPhimoe& r) {
         r.rms_norms = r.softmax_top2 = true;
         r.window = 0;
       }},
  };
  for (const Part& part : parts) {
    test::RefPhimoe ref(*tiny);
    part.change(ref);
    const double err = max_diff(got, ref.logits(tokens));
    EXPECT_GT(err, kPartSeen) << part.name;
    std::printf("  reference with %s: %.3g from ferrite\n", part.name, err);
  }
  // The norms' biases: ferrite on the file without them misses the reference.
  const auto plain = test::make_tiny_family("phimoe", /*quirk=*/false);
  const double err = max_diff(eval(plain->path(), tokens, 512), test::RefPhimoe(*tiny).logits(tokens));
  EXPECT_GT(err, kPartSeen) << "zero norm biases";
  std::printf("  ferrite without the norm biases: %.3g from the reference\n", err);
}

// phimoe.router_jitter_noise sets the router's mask: 0.5 keeps experts
// whose logit is within max(|s|, m) of the best m, which the tokens here
// have (0.01, the default, keeps few).
TEST(RefPhimoe, RouterJitterKeyIsRead) {
  const auto tiny = test::make_tiny_family("phimoe", true, 0.5f);
  const std::vector<int32_t> tokens = test::tiny_family_prompt(1);
  const std::vector<float> got = eval(tiny->path(), tokens, 512);
  test::RefPhimoe ref(*tiny);
  ref.jitter = 0.5;
  const double err = max_diff(got, ref.logits(tokens));
  EXPECT_LE(err, kTolerance);
  ref.jitter = 0.01;
  const double other = max_diff(got, ref.logits(tokens));
  EXPECT_GT(other, kPartSeen) << "the reference with the default jitter";
  std::printf("  jitter 0.5: %.3g from the reference (%.3g from the reference with 0.01)\n", err, other);
}

TEST(RefPhimoe, BadRouterJitterIsRefused) {
  for (float bad : {-0.01f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    const auto tiny = test::make_tiny_family("phimoe", true, bad);
    try {
      model::Model::load(tiny->path().string());
      ADD_FAILURE() << "router jitter " << bad << " was accepted";
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("phimoe.router_jitter_noise"), std::string::npos) << e.what();
    }
  }
}

// llama.cpp c392e50's logits for this file (golden_dump) against the
// reference: the top-20 logits and log-sum-exp of every position. The
// reference under llama.cpp's definition (RMSNorms, renormalised softmax
// top 2, no window) meets them within kTolerance: the rest of it (LongRoPE,
// biases, attention) is llama.cpp's too, and the definition is the gap.
TEST(RefPhimoe, LlamaCppGoldensMissTheDefinition) {
  const auto tiny = test::make_tiny_family("phimoe");
  test::RefPhimoe as_llama_cpp(*tiny);
  as_llama_cpp.rms_norms = as_llama_cpp.softmax_top2 = true;
  as_llama_cpp.window = 0;
  for (int prompt : {1, 2}) {
    const test::Golden g = test::load_golden(std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden" /
                                             ("phimoe.p" + std::to_string(prompt) + ".json"));
    auto error = [&](const test::RefPhimoe& ref) {
      const test::ref::Rows expected = ref.logits(g.tokens);
      const size_t nv = expected.size() / g.tokens.size();
      const std::vector<float> ref32(expected.begin(), expected.end());
      double worst = 0;
      for (size_t i = 0; i < g.positions.size(); ++i) {
        worst = std::max(worst,
                         test::max_logit_error(std::span<const float>(ref32.data() + i * nv, nv), g.positions[i]));
      }
      return worst;
    };
    const double definition = error(test::RefPhimoe(*tiny)), llama_cpp = error(as_llama_cpp);
    EXPECT_GT(definition, kPartSeen) << "p" << prompt;
    EXPECT_LE(llama_cpp, kTolerance) << "p" << prompt;
    std::printf("  llama.cpp's golden p%d: %.3g from the reference (%.3g under llama.cpp's definition)\n", prompt,
                definition, llama_cpp);
  }
}

}  // namespace
}  // namespace ferrite
