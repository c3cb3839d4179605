// F16, BF16 and quantized models against llama.cpp's logits.
//
// Tolerance. Like llama.cpp we round the activations of every matrix product
// to the weight type's operand format (f16, bf16, or the 8-bit blocks of
// cpu/act_quant.h) and otherwise follow its arithmetic, so F16/BF16 models
// agree to ~2e-8 of the logit scale and quantized models agree to ~1e-7 at
// first. But each 8-bit activation rounding is a discontinuity: a last-bit
// difference in the value being rounded (our quantized dot products sum
// dequantized products in another order than llama.cpp's integer kernels)
// moves an activation by 1/127 of its block's maximum, and these random
// models amplify that to ~1e-2 of the logits from that position on (through
// the KV cache). Observed: exact until one position, then 0.5..3% relative.
// So: position 0 within kExactTol (proves the same arithmetic), every
// position within kFlipTol of its logit scale (largest |logit|), and the mean
// over positions within kMeanTol.
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "golden.h"
#include "model/model.h"
#include "single_sequence.h"

namespace ferrite {
namespace {

struct Case {
  std::string model;
  std::string golden;
  bool quantized;
};

constexpr double kFloatTol = 1e-4;   // F16/BF16 models, every position
constexpr double kExactTol = 1e-5;   // quantized models, position 0
constexpr double kFlipTol = 5e-2;    // quantized models, every position
constexpr double kMeanTol = 1.5e-2;  // quantized models, mean over positions

void PrintTo(const Case& c, std::ostream* os) { *os << c.golden; }

void check(const Case& c) {
  FERRITE_SHARED_FILE(model_path, c.model);
  FERRITE_SHARED_FILE(golden_path, c.golden);
  const test::Golden g = test::load_golden(golden_path);
  auto model = model::Model::load(model_path.string());
  test::SingleSequence seq(*model, 1024, 2);
  const std::vector<float> logits = seq.eval(g.tokens, 512);
  const size_t nv = static_cast<size_t>(model->hparams().n_vocab);
  double worst = 0, total = 0;
  for (size_t i = 0; i < g.positions.size(); ++i) {
    const double err = test::max_logit_error(std::span<const float>(logits.data() + i * nv, nv), g.positions[i]);
    const double rel = err / test::logit_scale(g.positions[i]);
    worst = std::max(worst, rel);
    total += rel;
    const double tol = !c.quantized ? kFloatTol : i == 0 ? kExactTol : kFlipTol;
    EXPECT_LE(rel, tol) << c.golden << " position " << i;
  }
  const double mean = total / static_cast<double>(g.positions.size());
  if (c.quantized) {
    EXPECT_LE(mean, kMeanTol) << c.golden;
  }
  std::printf("  %s: max relative error %.3g, mean %.3g\n", c.golden.c_str(), worst, mean);
}

// Prompt p1 (17 tokens) of every file, or p2 (~200 tokens, the Slow suite).
std::vector<Case> cases(const char* prompt) {
  std::vector<Case> out;
  out.push_back({"models/llama-2-tiny-random.gguf", std::string("golden/logits/llama-2-tiny-random.") + prompt + ".json",
                 false});
  for (const char* t : {"F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L",
                        "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S",
                        "IQ2_M", "IQ3_XXS", "IQ3_S", "IQ3_M", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0"}) {
    const std::string type = t;
    out.push_back({"models/synth/synth-llama-" + type + ".gguf",
                   "golden/logits/synth-llama-" + type + "." + prompt + ".json", type != "F16" && type != "BF16"});
  }
  return out;
}

class GoldenQuant : public ::testing::TestWithParam<Case> {};
TEST_P(GoldenQuant, TopLogitsAndLogSumExp) { check(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Models, GoldenQuant, ::testing::ValuesIn(cases("p1")));

class GoldenQuantSlow : public ::testing::TestWithParam<Case> {};
TEST_P(GoldenQuantSlow, TopLogitsAndLogSumExp) { check(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Models, GoldenQuantSlow, ::testing::ValuesIn(cases("p2")));

}  // namespace
}  // namespace ferrite
