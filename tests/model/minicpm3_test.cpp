// minicpm3 on the tiny random model of tiny_minicpm3.h against
// llama.cpp c392e50's logits of the same file (golden/minicpm3.p<N>.json,
// golden_dump of shared/README.md, F32, on the files DISABLED_Write writes)
// and against the double-precision forward of the expanded form
// (ref::minicpm3_reference), both prompts of the tiny families, in one pass
// and in passes of 7 tokens.
// Bound: deepseek2's latent-attention bound (tiny_deepseek.h kMlaTolerance):
// ferrite caches the f16 latent and rounds the absorbed queries, llama.cpp
// caches f16 full keys and values, so both sit at the f16 floor of the exact
// result, not on each other.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "golden.h"
#include "model/model.h"
#include "model/tiny_deepseek.h"
#include "model/tiny_minicpm3.h"
#include "single_sequence.h"

namespace ferrite {
namespace {

constexpr double kTolerance = test::kMlaTolerance;
constexpr double kFactorsSeen = 0.05;

std::vector<float> eval(const std::string& path, const std::vector<int32_t>& tokens, int64_t n_batch) {
  auto m = model::Model::load(path);
  EXPECT_EQ(m->hparams().arch, "minicpm3");
  return test::SingleSequence(*m, 64, 2).eval(tokens, n_batch);
}

double worst_golden_error(const std::vector<float>& logits, const test::Golden& g) {
  const size_t nv = test::tiny_family_detail::kVocab;
  double worst = 0;
  for (size_t i = 0; i < std::min(g.positions.size(), g.tokens.size()); ++i) {
    worst = std::max(worst, test::max_logit_error(std::span<const float>(logits.data() + i * nv, nv), g.positions[i]));
  }
  return worst;
}

double worst_ref_error(const std::vector<float>& got, const test::ref::Rows& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
  }
  return worst;
}

TEST(MiniCpm3, MatchesLlamaCppAndReference) {
  const auto tiny = test::make_tiny_minicpm3();
  for (int prompt : {1, 2}) {
    const std::vector<int32_t> tokens = test::tiny_family_prompt(prompt);
    const test::Golden g = test::load_golden(test::deepseek_golden("minicpm3", prompt));
    ASSERT_EQ(g.tokens, tokens) << "the golden was made for other tokens";
    const test::ref::Rows want = test::ref::minicpm3_reference(*tiny, {}, tokens);
    for (int64_t n_batch : {int64_t{512}, int64_t{7}}) {
      const std::vector<float> got = eval(tiny->path().string(), tokens, n_batch);
      const double golden_err = worst_golden_error(got, g), ref_err = worst_ref_error(got, want);
      EXPECT_LE(golden_err, kTolerance) << "p" << prompt << ", batch " << n_batch;
      EXPECT_LE(ref_err, kTolerance) << "p" << prompt << ", batch " << n_batch;
      std::printf("  minicpm3 p%d (batch %lld): max |logit error| %.3g against llama.cpp, %.3g against the "
                  "double-precision reference\n",
                  prompt, static_cast<long long>(n_batch), golden_err, ref_err);
    }
  }
}

// LongRoPE's short factors reach the rotation: the same weights with factors
// of 1 miss llama.cpp's logits.
TEST(MiniCpm3, RopeFactorsMatter) {
  const auto plain = test::make_tiny_minicpm3({}, /*factors=*/false);
  const test::Golden g = test::load_golden(test::deepseek_golden("minicpm3", 1));
  const double err = worst_golden_error(eval(plain->path().string(), g.tokens, 512), g);
  EXPECT_GT(err, kFactorsSeen);
  std::printf("  minicpm3 with factors of 1: max |logit error| %.3g\n", err);
}

// Sizes that do not fit together are refused by name: a rotary part as wide
// as the key, and fewer key/value heads than query heads.
TEST(MiniCpm3, RefusesInconsistentSizes) {
  for (const char* key : {"rope.dimension_count", "attention.head_count_kv"}) {
    const auto tiny = test::make_tiny_minicpm3();
    test::TinyGguf g("minicpm3", 5);
    test::tiny_family_detail::add_vocab(g);
    const gguf::File file = gguf::File::open(tiny->path().string());
    for (const gguf::KeyValue& kv : file.metadata()) {
      if (kv.key.rfind("minicpm3.", 0) == 0) g.writer().set(kv.key, kv.value);
    }
    if (std::string(key) == "rope.dimension_count") {
      g.set_u32(key, 32);  // the whole key
    } else {
      g.set_u32(key, 2);
    }
    for (const gguf::TensorInfo& t : file.tensors()) {
      const std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
      g.add(t.name, ne, 0.1f);
    }
    g.write();
    try {
      model::Model::load(g.path().string());
      ADD_FAILURE() << "loaded a minicpm3 file with a bad " << key;
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("inconsistent minicpm3 sizes"), std::string::npos) << e.what();
    }
  }
}

// Writes the file the goldens were made from:
//   FERRITE_TINY_OUT=DIR build/tests/test_model --gtest_also_run_disabled_tests
//     --gtest_filter=MiniCpm3.DISABLED_Write
//   golden_dump -m DIR/tiny-minicpm3.gguf -i <tiny_family_prompt(N)> --no-bos > minicpm3.pN.json
TEST(MiniCpm3, DISABLED_Write) {
  const char* out = std::getenv("FERRITE_TINY_OUT");
  ASSERT_NE(out, nullptr) << "set FERRITE_TINY_OUT";
  const auto tiny = test::make_tiny_minicpm3();
  std::filesystem::copy_file(tiny->path(), std::filesystem::path(out) / "tiny-minicpm3.gguf",
                             std::filesystem::copy_options::overwrite_existing);
}

}  // namespace
}  // namespace ferrite
