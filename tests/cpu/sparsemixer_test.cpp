// cpu::sparsemixer_route (phimoe's router) against the double-precision
// reading of transformers' definition (tests/model/ref_sparsemixer.h): two
// worked examples by hand, then fresh random logits (a new seed each run,
// FERRITE_TEST_SEED reproduces one) over expert counts, rounds and jitters,
// some on a coarse grid (exact ties: the lower id first). The ids must
// match; the weights within 1e-6 relative (the float rounding of 1 / sum),
// except in the rounds where an expert's relative gap lies within 1e-6 of
// the threshold (not on it), where float and double may mask differently.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/ops/sparsemixer.h"
#include "model/ref_sparsemixer.h"

namespace ferrite {
namespace {

uint32_t run_seed() {
  static const uint32_t seed = [] {
    if (const char* env = std::getenv("FERRITE_TEST_SEED")) return static_cast<uint32_t>(std::strtoul(env, nullptr, 10));
    return std::random_device{}();
  }();
  return seed;
}

// Round 1: 0.995 is within 2% of 1.0 (kept), 0.5 and -1 are not; round 2
// (0 left): 0.5 and -1 are more than 2% below 0.995.
TEST(Sparsemixer, WorkedExamples) {
  const float logits[] = {0.995f, 1.0f, 0.5f, -1.0f};
  int32_t ids[2];
  float w[2];
  cpu::sparsemixer_route(logits, 4, 2, 0.01f, ids, w);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 0);
  EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(static_cast<double>(0.995f - 1.0f))), 1e-7);
  EXPECT_FLOAT_EQ(w[1], 1.0f);

  // Negative logits: the gap is relative to |s| (here larger than the best
  // logit): (-1 - -1.01) / 1.01 < 0.02 keeps -1.01 beside -1.
  const float neg[] = {-3.0f, -1.01f, -1.0f};
  cpu::sparsemixer_route(neg, 3, 2, 0.01f, ids, w);
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 1);
  EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(static_cast<double>(-1.01f - -1.0f))), 1e-7);
  EXPECT_FLOAT_EQ(w[1], 1.0f);

  // A large jitter masks nothing: the first weight is the plain softmax's.
  const float all[] = {0.0f, 1.0f, 2.0f};
  cpu::sparsemixer_route(all, 3, 1, 10.0f, ids, w);
  EXPECT_EQ(ids[0], 2);
  EXPECT_NEAR(w[0], 1.0 / (1.0 + std::exp(-1.0) + std::exp(-2.0)), 1e-7);
}

TEST(Sparsemixer, MatchesDoubleReferenceOnRandomLogits) {
  std::mt19937 rng(run_seed());
  const std::string note = "seed " + std::to_string(run_seed()) + " (FERRITE_TEST_SEED reproduces)";
  struct Shape {
    int64_t n_expert, k;
  };
  int compared = 0, edge_rounds = 0;
  for (const Shape sh : {Shape{4, 2}, Shape{16, 2}, Shape{7, 7}, Shape{60, 4}, Shape{256, 8}}) {
    for (float jitter : {0.01f, 0.1f, 0.25f, 1.0f}) {
      for (bool grid : {false, true}) {
        std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
        for (int t = 0; t < 50; ++t) {
          std::vector<float> s(static_cast<size_t>(sh.n_expert));
          for (float& v : s) v = grid ? std::round(dist(rng) * 8.0f) / 8.0f : dist(rng);
          std::vector<int32_t> ids(static_cast<size_t>(sh.k));
          std::vector<float> w(static_cast<size_t>(sh.k));
          cpu::sparsemixer_route(s.data(), sh.n_expert, sh.k, jitter, ids.data(), w.data());
          std::vector<int64_t> ref_ids;
          std::vector<double> ref_w;
          bool edge = false;
          test::ref_sparsemixer(std::vector<double>(s.begin(), s.end()), sh.k, static_cast<double>(jitter), ref_ids,
                                ref_w, &edge);
          for (int64_t j = 0; j < sh.k; ++j) {
            ASSERT_EQ(ids[j], ref_ids[j]) << sh.n_expert << " experts, round " << j << ", " << note;
            if (!edge) {
              EXPECT_NEAR(w[j], ref_w[j], 1e-6 * ref_w[j]) << sh.n_expert << " experts, " << note;
            }
          }
          compared += edge ? 0 : 1;
          edge_rounds += edge ? 1 : 0;
        }
      }
    }
  }
  std::printf("  %d tokens compared, %d near the mask's edge (ids only); %s\n", compared, edge_rounds, note.c_str());
}

// NaN ranks below every number; a round without a finite logit takes the
// lowest id left and weighs 0; ids stay distinct and in range.
TEST(Sparsemixer, NaNAndInfiniteLogits) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float logits[] = {nan, 1.0f, nan, -inf};
  int32_t ids[4];
  float w[4];
  cpu::sparsemixer_route(logits, 4, 4, 0.01f, ids, w);
  EXPECT_EQ(ids[0], 1);
  EXPECT_FLOAT_EQ(w[0], 1.0f);
  EXPECT_EQ(ids[1], 0);
  EXPECT_EQ(ids[2], 2);
  EXPECT_EQ(ids[3], 3);
  for (int j = 1; j < 4; ++j) EXPECT_EQ(w[j], 0.0f) << "round " << j;
}

}  // namespace
}  // namespace ferrite
