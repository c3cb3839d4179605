// The squared ReLU kernel (cuda/kernels/relu_sqr.h) against its CPU twin
// (cpu/ops/relu_sqr.h) on fresh random inputs: the same bits, zeros for the
// negative half and for -0.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/ops/relu_sqr.h"
#include "cuda/kernels/relu_sqr.h"
#include "device_util.h"

namespace ferrite::cuda {
namespace {

TEST(GpuReluSqr, SameBitsAsTheCpu) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = test::fresh_rng();
  constexpr size_t kN = 10007;  // not a multiple of the block
  auto x = test::random_floats(kN, rng, -6.0f, 6.0f);
  x[0] = -0.0f;
  x[1] = 0.0f;
  std::vector<float> ref = x;
  cpu::relu_sqr_inplace(ref.data(), static_cast<int64_t>(kN));
  DeviceBuffer xd = test::to_device(x);
  relu_sqr(xd.as<float>(), static_cast<int64_t>(kN), nullptr);
  const std::vector<float> got = test::to_host<float>(xd, kN);
  EXPECT_EQ(std::memcmp(got.data(), ref.data(), kN * sizeof(float)), 0);
  EXPECT_EQ(ref[0], 0.0f);
  int positive = 0;
  for (size_t i = 0; i < kN; ++i) positive += x[i] > 0.0f && ref[i] == x[i] * x[i];
  EXPECT_GT(positive, static_cast<int>(kN / 3));  // the inputs' positive half squared
}

// ReLU (t5's feed-forward) against cpu::relu_inplace: the same bits.
TEST(GpuReluSqr, ReluSameBitsAsTheCpu) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = test::fresh_rng();
  constexpr size_t kN = 10007;
  auto x = test::random_floats(kN, rng, -6.0f, 6.0f);
  std::vector<float> ref = x;
  cpu::relu_inplace(ref.data(), static_cast<int64_t>(kN));
  DeviceBuffer xd = test::to_device(x);
  relu(xd.as<float>(), static_cast<int64_t>(kN), nullptr);
  const std::vector<float> got = test::to_host<float>(xd, kN);
  EXPECT_EQ(std::memcmp(got.data(), ref.data(), kN * sizeof(float)), 0);
  int kept = 0;
  for (size_t i = 0; i < kN; ++i) kept += x[i] > 0.0f && ref[i] == x[i];
  EXPECT_GT(kept, static_cast<int>(kN / 3));
}

}  // namespace
}  // namespace ferrite::cuda
