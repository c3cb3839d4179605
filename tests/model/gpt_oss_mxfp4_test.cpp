// gpt-oss with MXFP4 experts end to end: the tiny gpt-oss model
// (ref_gpt_oss.h) through the MXFP4_MOE preset (expert stacks in MXFP4,
// every other weight in Q8_0: quant/mix.cpp), so that the MoE paths
// multiply MXFP4 experts with their biases, the clamped SwiGLU and the
// router's softmax over the chosen logits. Checked, at every ISA level the
// host has and in one pass, passes of 7 and one token at a time:
// - against ik_llama.cpp 8337e4c's logits of the very same file
//   (tests/model/golden/gpt-oss-MXFP4_MOE.p1.json);
// - against ferrite's F32 evaluation of the same weights (the quantized
//   copy stored back as F32): only the 8-bit activations of the quantized
//   products differ.
// Tolerances, relative to the logit scale at each position: 0.05 against the
// F32 run (the quantized goldens' bound, golden_quant_test.cpp; measured
// 0.037 at AVX2 and scalar), 0.08 against ik_llama.cpp (measured 0.052): ik
// rounds the activations of its MXFP4 and Q8_0 products to its own 8-bit
// formats (mxfp4_golden_test.cpp), which alone puts its logits 0.029 from the
// exact F32 run of the same weights, and ours are 0.037 from it the other
// way. MXFP4 itself moves these logits by 0.99 (the F32 model against its
// MXFP4_MOE copy), so a wrong expert slice, nibble order or scale is outside.
// Regenerating the golden (ik_llama.cpp built outside the repository):
//   build/tests/test_model --gtest_also_run_disabled_tests
//       --gtest_filter='GptOssMxfp4.DISABLED_Write' with FERRITE_TINY_OUT=DIR
//   golden-ik/golden_dump -m DIR/tiny-gpt-oss-MXFP4_MOE.gguf -i <tiny_family_prompt(1)'s ids> --no-bos
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "cpu/features.h"
#include "gguf/file.h"
#include "golden.h"
#include "model/model.h"
#include "model/ref_gpt_oss.h"
#include "model/single_sequence.h"
#include "quantized_copy.h"

namespace ferrite {
namespace {

constexpr double kTol = 0.05;          // relative to the logit scale, every position
constexpr double kIkTol = 0.08;        // against ik_llama.cpp (see the top: its 8-bit activations differ from ours)
constexpr double kMxfp4Moves = 0.1;    // MXFP4 moves some position's logits by more (relative)
constexpr int64_t kCtx = 64;

std::filesystem::path golden_path() {
  return std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden/gpt-oss-MXFP4_MOE.p1.json";
}

// The tiny model's MXFP4_MOE copy and its F32 twin of the same weights.
struct Files {
  test::TinyGptOss tiny{test::GptOssConfig{}};
  std::filesystem::path quantized = std::filesystem::path(::testing::TempDir()) / "tiny-gpt-oss-MXFP4_MOE.gguf";
  std::filesystem::path dequantized = std::filesystem::path(::testing::TempDir()) / "tiny-gpt-oss-MXFP4_MOE-f32.gguf";
  Files() {
    const gguf::File in = gguf::File::open(tiny.path().string());
    test::write_quantized_copy(in, "MXFP4_MOE", false, quantized.string());
    test::write_quantized_copy(in, "MXFP4_MOE", true, dequantized.string());
  }
  ~Files() {
    std::filesystem::remove(quantized);
    std::filesystem::remove(dequantized);
  }
};

std::vector<float> eval(const std::filesystem::path& path, const std::vector<int32_t>& tokens, int64_t n_batch) {
  auto m = model::Model::load(path.string());
  test::SingleSequence seq(*m, kCtx, 2);
  return seq.eval(tokens, n_batch);
}

// Worst per-position difference of `a` from `b`, relative to the golden's logit scale there.
double worst_relative(const std::vector<float>& a, const std::vector<float>& b, const test::Golden& g, size_t nv) {
  double worst = 0;
  for (size_t i = 0; i < g.positions.size(); ++i) {
    double d = 0;
    for (size_t v = 0; v < nv; ++v) d = std::max(d, static_cast<double>(std::fabs(a[i * nv + v] - b[i * nv + v])));
    worst = std::max(worst, d / test::logit_scale(g.positions[i]));
  }
  return worst;
}

TEST(GptOssMxfp4, FileHoldsMxfp4Experts) {
  Files f;
  const gguf::File q = gguf::File::open(f.quantized.string());
  int mxfp4 = 0;
  for (const auto& t : q.tensors()) {
    const bool expert = t.name.find("_exps.weight") != std::string::npos;
    if (expert) {
      EXPECT_EQ(t.type, TensorType::MXFP4) << t.name;
      ++mxfp4;
    } else if (t.name.find("ffn_gate_inp") != std::string::npos) {
      EXPECT_EQ(t.type, TensorType::F32) << t.name;  // routers stay F32, as llama.cpp's quantize keeps them
    } else if (t.name.find(".weight") != std::string::npos && t.n_dims >= 2) {
      EXPECT_EQ(t.type, TensorType::Q8_0) << t.name;
    }
  }
  EXPECT_EQ(mxfp4, 6);  // gate, up and down experts of both layers
}

TEST(GptOssMxfp4, MatchesIkLlamaAndF32OfSameWeights) {
  Files f;
  const test::Golden g = test::load_golden(golden_path());
  ASSERT_EQ(g.tokens, test::tiny_family_prompt(1)) << "the golden was made for other tokens";
  const size_t n = g.tokens.size(), nv = 320;
  const std::vector<float> plain = eval(f.dequantized, g.tokens, 512);
  ASSERT_EQ(plain.size(), n * nv);
  double plain_ik = 0;  // how far ik's quantized products sit from the exact ones of the same weights
  for (size_t i = 0; i < n; ++i) {
    plain_ik = std::max(plain_ik, test::max_logit_error(std::span<const float>(plain.data() + i * nv, nv), g.positions[i]) /
                                      test::logit_scale(g.positions[i]));
  }
  std::printf("  F32 run of the same weights against ik_llama.cpp: %.3g\n", plain_ik);
  // MXFP4 matters: the F32 model's logits are far from its MXFP4 copy's.
  const double moved = worst_relative(eval(f.tiny.path(), g.tokens, 512), plain, g, nv);
  EXPECT_GT(moved, kMxfp4Moves) << "MXFP4 quantization should move these logits";
  const cpu::Isa before = cpu::active_isa();
  for (cpu::Isa isa : {cpu::Isa::Scalar, cpu::Isa::Neon, cpu::Isa::NeonI8mm, cpu::Isa::Avx2, cpu::Isa::Avx512}) {
    if (cpu::set_isa(isa) != isa) continue;
    SCOPED_TRACE(cpu::isa_name(isa));
    for (int64_t n_batch : {int64_t{512}, int64_t{7}, int64_t{1}}) {
      const std::vector<float> got = eval(f.quantized, g.tokens, n_batch);
      ASSERT_EQ(got.size(), n * nv);
      double ik = 0;
      for (size_t i = 0; i < n; ++i) {
        const double err = test::max_logit_error(std::span<const float>(got.data() + i * nv, nv), g.positions[i]) /
                           test::logit_scale(g.positions[i]);
        EXPECT_LE(err, kIkTol) << "position " << i << ", batch " << n_batch;
        ik = std::max(ik, err);
      }
      const double self = worst_relative(got, plain, g, nv);
      EXPECT_LE(self, kTol) << "against the F32 run of the same weights, batch " << n_batch;
      std::printf("  %s batch %lld: max relative error %.3g against ik_llama.cpp, %.3g against F32 of the same "
                  "weights (MXFP4 itself moves them by %.3g)\n",
                  cpu::isa_name(isa).c_str(), static_cast<long long>(n_batch), ik, self, moved);
    }
  }
  cpu::set_isa(before);
}

// Writes the quantized file for the ik_llama.cpp golden dumper (see the top).
TEST(GptOssMxfp4, DISABLED_Write) {
  const char* out = std::getenv("FERRITE_TINY_OUT");
  ASSERT_NE(out, nullptr) << "set FERRITE_TINY_OUT";
  Files f;
  std::filesystem::copy_file(f.quantized, std::filesystem::path(out) / "tiny-gpt-oss-MXFP4_MOE.gguf",
                             std::filesystem::copy_options::overwrite_existing);
}

}  // namespace
}  // namespace ferrite
