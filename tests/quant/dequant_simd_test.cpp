// The AVX2 and AVX-512 dequantizers against the reference on fresh random
// blocks: the output must be bit-identical.
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "quant/dequant_ref.h"
#include "quant/dequant_simd.h"
#include "quant/type_traits.h"

namespace ferrite::quant {
namespace {

// False on other targets (the aarch64 build), where the tests skip.
#if defined(__x86_64__)
bool has_avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c(); }
bool has_avx512() {
  return has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
#else
bool has_avx2() { return false; }
bool has_avx512() { return false; }
#endif

// A random finite half in [-2, 2] (scales, and F16 elements).
uint16_t random_half(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  return fp32_to_fp16(u(rng));
}

// `n_blocks` random blocks of `type`; the f16 fields at `half_offsets` of each
// block are replaced by finite values (random bytes there could be NaN).
std::vector<uint8_t> random_blocks(TensorType type, int n_blocks, std::initializer_list<size_t> half_offsets,
                                   std::mt19937& rng) {
  const TypeTraits& t = type_traits(type);
  std::vector<uint8_t> data(t.block_bytes * static_cast<size_t>(n_blocks));
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : data) b = static_cast<uint8_t>(byte(rng));
  for (int i = 0; i < n_blocks; ++i) {
    for (size_t off : half_offsets) {
      const uint16_t h = random_half(rng);
      std::memcpy(data.data() + t.block_bytes * static_cast<size_t>(i) + off, &h, sizeof(h));
    }
  }
  return data;
}

struct Case {
  TensorType type;
  ToFloatFn avx2;
  ToFloatFn avx512;
  std::vector<size_t> half_offsets;  // empty: every element is a half (F16)
};

void compare(const Case& c, ToFloatFn fast, int n_blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  const TypeTraits& t = type_traits(c.type);
  std::vector<uint8_t> data;
  if (c.type == TensorType::F16) {
    data.resize(2 * static_cast<size_t>(n_blocks));
    for (int i = 0; i < n_blocks; ++i) {
      const uint16_t h = random_half(rng);
      std::memcpy(data.data() + 2 * i, &h, 2);
    }
  } else {
    data = random_blocks(c.type, n_blocks, {}, rng);
    for (int i = 0; i < n_blocks; ++i) {
      for (size_t off : c.half_offsets) {
        const uint16_t h = random_half(rng);
        std::memcpy(data.data() + t.block_bytes * static_cast<size_t>(i) + off, &h, sizeof(h));
      }
    }
  }
  const int64_t n = t.block_size * n_blocks;
  std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n), -1.0f);
  t.to_float_ref(data.data(), want.data(), n);
  fast(data.data(), got.data(), n);
  ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << t.name << " n=" << n;
}

std::vector<Case> cases() {
  return {
      {TensorType::F16, avx2::dequant_f16, avx512::dequant_f16, {}},
      {TensorType::BF16, avx2::dequant_bf16, avx512::dequant_bf16, {}},
      {TensorType::Q4_0, avx2::dequant_q4_0, avx512::dequant_q4_0, {0}},
      {TensorType::Q8_0, avx2::dequant_q8_0, avx512::dequant_q8_0, {0}},
      {TensorType::Q4_K, avx2::dequant_q4_k, avx512::dequant_q4_k, {0, 2}},
      {TensorType::Q6_K, avx2::dequant_q6_k, avx512::dequant_q6_k, {208}},
  };
}

// Lengths that exercise the vector bodies and (for F16/BF16) the scalar tails.
constexpr int kBlockCounts[] = {1, 3, 17, 64, 257};

TEST(DequantSimd, Avx2MatchesReference) {
  if (!has_avx2()) GTEST_SKIP() << "CPU has no AVX2";
  uint32_t seed = 1;
  for (const Case& c : cases()) {
    for (int nb : kBlockCounts) compare(c, c.avx2, nb, seed++);
  }
}

TEST(DequantSimd, Avx512MatchesReference) {
  if (!has_avx512()) GTEST_SKIP() << "CPU has no AVX-512";
  uint32_t seed = 1000;
  for (const Case& c : cases()) {
    for (int nb : kBlockCounts) compare(c, c.avx512, nb, seed++);
  }
}

TEST(DequantSimd, RegistryPicksAFastPathWhereOneExists) {
  const TypeTraits& q4 = type_traits(TensorType::Q4_K);
  if (has_avx2() && std::string(dequant_isa()) != "ref") {
    EXPECT_NE(q4.to_float, q4.to_float_ref);
  } else {
    EXPECT_EQ(q4.to_float, q4.to_float_ref);
  }
  const TypeTraits& iq = type_traits(TensorType::IQ2_XXS);
  EXPECT_EQ(iq.to_float, iq.to_float_ref);  // no fast path: the reference
}

}  // namespace
}  // namespace ferrite::quant
