// The fixtures' weight generator (seeded_checkpoint.h): SplitMix64's known
// first output, the draw's range and spread, and the file it writes. That
// the numpy twin in scripts/seeded_fixtures.py draws the same values shows in
// fixtures_test.cpp: transformers' logits come from that twin's weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "convert/safetensors.h"
#include "seeded_checkpoint.h"

namespace ferrite {
namespace {

// The reference SplitMix64 seeded with 0 first returns 0xE220A8397B1DCDAF
// (state 0x9E3779B97F4A7C15 through the output function).
TEST(SeededCheckpoint, SplitMixFirstOutput) {
  EXPECT_EQ(test::splitmix64_mix(0x9E3779B97F4A7C15ull), 0xE220A8397B1DCDAFull);
  // Element 0 of tensor 0 under seed 0 is that state: top 24 bits 0xE220A8.
  const std::vector<float> v = test::seeded_uniform(0, 0, 1, 0.0f, 1.0f);
  EXPECT_EQ(v[0], static_cast<float>(0xE220A8 / 8388608.0 - 1.0));
}

TEST(SeededCheckpoint, UniformHasTheAskedMeanAndSpread) {
  const size_t n = 1 << 16;
  const std::vector<float> v = test::seeded_uniform(7, 3, n, 1.0f, 0.5f);
  double sum = 0, sq = 0;
  for (float x : v) {
    ASSERT_GE(x, 0.5f);
    ASSERT_LT(x, 1.5f);
    sum += x;
    sq += (x - 1.0) * (x - 1.0);
  }
  EXPECT_NEAR(sum / n, 1.0, 0.01);
  EXPECT_NEAR(std::sqrt(sq / n), 0.5 / std::sqrt(3.0), 0.01);
  // Another tensor index draws other values.
  EXPECT_NE(test::seeded_uniform(7, 4, 4, 1.0f, 0.5f), std::vector<float>(v.begin(), v.begin() + 4));
}

TEST(SeededCheckpoint, WritesTheTensorsWeightsJsonLists) {
  const test::Json w = test::Json::parse(R"({"file": "model.safetensors", "seed": 5, "tensors": [
      {"name": "b", "dtype": "BF16", "shape": [3, 2], "mean": 1.0, "half": 0.25},
      {"name": "a", "dtype": "F32", "shape": [4], "mean": 0.0, "half": 2.0}]})");
  test::TempDir tmp;
  test::write_bytes(tmp.file("model.safetensors"), test::seeded_safetensors(w));
  const convert::Checkpoint f = convert::Checkpoint::open_dir(tmp.path().string());
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.find("a")->dtype, "F32");
  EXPECT_EQ(f.find("b")->dtype, "BF16");
  const std::vector<float> a = test::seeded_uniform(5, 1, 4, 0.0f, 2.0f);
  const std::vector<float> b = test::seeded_uniform(5, 0, 6, 1.0f, 0.25f);
  const auto* ta = f.find("a");
  const auto* tb = f.find("b");
  ASSERT_NE(ta, nullptr);
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->shape, (std::vector<int64_t>{3, 2}));
  std::vector<float> got_a(4);
  std::memcpy(got_a.data(), ta->data, 16);
  EXPECT_EQ(got_a, a);
  for (size_t i = 0; i < 6; ++i) {
    uint16_t h = 0;
    std::memcpy(&h, tb->data + 2 * i, 2);
    EXPECT_NEAR(bf16_to_fp32(h), b[i], std::fabs(b[i]) / 256) << i;
  }
}

TEST(SeededCheckpoint, RefusesDtypesItDoesNotDraw) {
  const test::Json w = test::Json::parse(
      R"({"file": "m.safetensors", "seed": 1, "tensors": [{"name": "x", "dtype": "I64", "shape": [2], "mean": 0, "half": 1}]})");
  EXPECT_THROW(test::seeded_safetensors(w), std::runtime_error);
}

}  // namespace
}  // namespace ferrite
