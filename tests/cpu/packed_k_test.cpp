// Packed Q4_K, Q5_K and Q6_K (cpu/packed/packed_k.h): the layout round-trips byte for byte, its
// reference kernel equals the plain reference K . Q8_K dot, the AVX-512
// kernel equals the layout's reference bit for bit, and matmul() on a packed
// view agrees with the plain reference product.
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/features.h"
#include "cpu/matmul.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "cpu/packed/packed_matmul.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/thread_pool.h"
#include "quant/blocks.h"
#include "quant/type_traits.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kRows = 32;   // two groups
constexpr int64_t kK = 512;     // two super-blocks
constexpr int64_t kTokens = 11; // one full tile of 8 and a partial one

struct Plain {
  std::vector<uint8_t> bytes;
  MatView view;
};

Plain make_k(TensorType type, int64_t n, int64_t k, uint32_t seed) {
  const auto f = test::random_floats(static_cast<size_t>(n * k), seed);
  Plain p;
  const uint64_t rb = tensor_row_bytes(type, static_cast<uint64_t>(k));
  p.bytes.resize(rb * static_cast<uint64_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    quant::type_traits(type).from_float(f.data() + r * k, p.bytes.data() + r * rb, k, nullptr);
  }
  p.view = MatView{type, p.bytes.data(), k, n, rb};
  return p;
}

struct Acts {
  std::vector<uint8_t> q8;
  PackedActs view;
};

Acts make_acts(TensorType type, int64_t m, int64_t k, uint32_t seed) {
  const auto x = test::random_floats(static_cast<size_t>(m * k), seed);
  const QuantDot* qd = quant_dot_ref(type);
  Acts a;
  const size_t rb = qd->act_row_bytes(k);
  a.q8.resize(rb * static_cast<size_t>(m));
  for (int64_t t = 0; t < m; ++t) qd->quantize(x.data() + t * k, a.q8.data() + t * rb, k);
  a.view.q8 = a.q8.data();
  a.view.row_bytes = rb;
  a.view.n_blocks = k / quant::kQKK;
  return a;
}

std::vector<uint8_t> packed_of(const Plain& p) {
  std::vector<uint8_t> out(p.bytes.size());
  pack_rows(p.view, out.data());
  return out;
}

// Packs p (after overwriting its bytes with random ones when `scramble`
// seeds it), expects another byte order, and unpacks back to p's bytes.
void expect_lossless(Plain& p, uint32_t scramble = 0) {
  if (scramble != 0) {
    std::mt19937 rng(scramble);
    for (auto& b : p.bytes) b = static_cast<uint8_t>(rng());
  }
  const auto packed = packed_of(p);
  EXPECT_NE(packed, p.bytes);
  std::vector<uint8_t> back(p.bytes.size());
  unpack_rows(p.view, packed.data(), back.data());
  EXPECT_EQ(back, p.bytes);
}

// Runs `kernel` over all groups and tokens in tiles of up to kPackTokens: [m, n].
std::vector<float> run_kernel(PackedKernel kernel, const std::vector<uint8_t>& packed, const Plain& p, const Acts& a,
                              int64_t m) {
  std::vector<float> y(static_cast<size_t>(m * p.view.n), -1.0f);
  const size_t group_bytes = static_cast<size_t>(kPackRows) * p.view.row_bytes;
  for (int64_t g = 0; g < p.view.n / kPackRows; ++g) {
    for (int64_t t = 0; t < m; t += kPackTokens) {
      kernel(packed.data() + g * group_bytes, a.view, t, std::min(kPackTokens, m - t), y.data() + t * p.view.n + g * kPackRows,
             p.view.n);
    }
  }
  return y;
}

class PackedK : public ::testing::TestWithParam<TensorType> {};

TEST_P(PackedK, RoundTripsByteForByte) {
  const TensorType type = GetParam();
  Plain p = make_k(type, kRows, kK, 1);
  ASSERT_TRUE(packable(p.view));
  expect_lossless(p);
}

TEST_P(PackedK, RoundTripsEveryScaleBitPattern) {
  // Random bytes everywhere (all 6-bit scale/min codes, all d values): still lossless.
  const TensorType type = GetParam();
  Plain p = make_k(type, kPackRows, kK, 2);
  expect_lossless(p, 3);
}

TEST_P(PackedK, ShapesThatDoNotFitAreNotPackable) {
  const TensorType type = GetParam();
  EXPECT_FALSE(packable(make_k(type, 24, 256, 4).view));  // rows not a multiple of 16
  EXPECT_TRUE(packable(make_k(type, 16, 256, 5).view));
}

TEST_P(PackedK, ReferenceKernelEqualsPlainDot) {
  const TensorType type = GetParam();
  const Plain p = make_k(type, kRows, kK, 6);
  const Acts a = make_acts(type, kTokens, kK, 7);
  const auto packed = packed_of(p);
  const PackedKernel ref = packed_kernel_ref(type);
  ASSERT_NE(ref, nullptr);
  const auto y = run_kernel(ref, packed, p, a, kTokens);
  const QuantDot* qd = quant_dot_ref(type);
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t r = 0; r < kRows; ++r) {
      const float want = qd->dot(p.view.row(r), a.q8.data() + t * a.view.row_bytes, kK);
      EXPECT_EQ(y[static_cast<size_t>(t * kRows + r)], want) << "t=" << t << " r=" << r;
    }
  }
}

TEST_P(PackedK, Avx512KernelEqualsReferenceBitForBit) {
  const TensorType type = GetParam();
  if (active_isa() < Isa::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  const Plain p = make_k(type, kRows, kK, 8);
  const Acts a = make_acts(type, kTokens, kK, 9);
  const auto packed = packed_of(p);
  // The kernels themselves (find_packed_kernel offers Q6_K's unless FERRITE_REPACK_Q6K=0).
  const PackedKernel fast = type == TensorType::Q4_K   ? packed_q4_k_avx512
                            : type == TensorType::Q5_K ? packed_q5_k_avx512
                                                       : packed_q6_k_avx512;
  const auto want = run_kernel(packed_kernel_ref(type), packed, p, a, kTokens);
  // Every tile width 1..8.
  for (int64_t nt = 1; nt <= kPackTokens; ++nt) {
    std::vector<float> y(static_cast<size_t>(nt * kRows));
    for (int64_t g = 0; g < kRows / kPackRows; ++g) {
      fast(packed.data() + g * kPackRows * p.view.row_bytes, a.view, 0, nt, y.data() + g * kPackRows, kRows);
    }
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_EQ(std::memcmp(&y[i], &want[i], sizeof(float)), 0) << "nt=" << nt << " i=" << i;
    }
  }
}

TEST_P(PackedK, MatmulOnPackedViewMatchesPlainReference) {
  const TensorType type = GetParam();
  if (find_packed_kernel(type, active_isa()) == nullptr) GTEST_SKIP() << "no packed kernel for this type here";
  const Plain p = make_k(type, kRows, kK, 10);
  const auto packed = packed_of(p);
  MatView w = p.view;
  w.packed = packed.data();
  const QuantDot* qd = quant_dot_ref(type);
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    MatmulScratch scratch;
    for (int64_t m : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{13}}) {
      const auto x = test::random_floats(static_cast<size_t>(m * kK), 11);
      std::vector<float> y(static_cast<size_t>(m * kRows));
      matmul(w, x.data(), m, y.data(), pool, scratch);
      std::vector<uint8_t> act(qd->act_row_bytes(kK));
      for (int64_t t = 0; t < m; ++t) {
        qd->quantize(x.data() + t * kK, act.data(), kK);
        for (int64_t r = 0; r < kRows; ++r) {
          const float want = qd->dot(p.view.row(r), act.data(), kK);
          EXPECT_NEAR(y[static_cast<size_t>(t * kRows + r)], want, 1e-4f * kK) << "m=" << m << " t=" << t;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PackedK, ::testing::Values(TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K),
                         [](const auto& info) { return tensor_type_name(info.param); });

}  // namespace
}  // namespace ferrite::cpu

namespace ferrite::cpu {
namespace {

// IQ4_XS: lossless for every byte pattern; the product of its layout is
// tested at every level by isa_parity_test.cpp.
TEST(PackedIq4Xs, RoundTripsEveryBytePattern) {
  Plain p = make_k(TensorType::IQ4_XS, kRows, kK, 20);
  ASSERT_TRUE(packable(p.view));
  EXPECT_FALSE(packable(make_k(TensorType::IQ4_XS, 24, kK, 21).view));
  expect_lossless(p, 22);
}

}  // namespace
}  // namespace ferrite::cpu

namespace ferrite::cpu {
namespace {

// IQ2_XXS from random bytes (every grid index, sign index and scale), each
// block's d a finite f16 in [2^-10, 2^-6).
Plain random_iq2_xxs(int64_t n, int64_t k, uint32_t seed) {
  Plain p;
  const uint64_t rb = tensor_row_bytes(TensorType::IQ2_XXS, static_cast<uint64_t>(k));
  p.bytes.resize(rb * static_cast<uint64_t>(n));
  std::mt19937 rng(seed);
  for (auto& b : p.bytes) b = static_cast<uint8_t>(rng());
  for (int64_t r = 0; r < n; ++r) {
    auto* blocks = reinterpret_cast<quant::BlockIQ2_XXS*>(p.bytes.data() + r * rb);
    for (int64_t b = 0; b < k / quant::kQKK; ++b) blocks[b].d = static_cast<uint16_t>(0x1400 + rng() % 0x1000);
  }
  p.view = MatView{TensorType::IQ2_XXS, p.bytes.data(), k, n, rb};
  return p;
}

// The sign-and-scale bytes re-encode the 7-bit sign indices (their prefix
// parity) and the scale: lossless for every byte pattern.
TEST(PackedIq2Xxs, RoundTripsEveryBytePattern) {
  Plain p = random_iq2_xxs(kRows, kK, 30);
  ASSERT_TRUE(packable(p.view));
  EXPECT_FALSE(packable(random_iq2_xxs(24, kK, 31).view));
  expect_lossless(p, 32);
}

// The layout's reference equals the plain IQ2_XXS . Q8_K dot bit for bit
// (the fast kernels against it: isa_parity_test.cpp).
TEST(PackedIq2Xxs, ReferenceKernelEqualsPlainDot) {
  const Plain p = random_iq2_xxs(kRows, kK, 33);
  const Acts a = make_acts(TensorType::IQ2_XXS, kTokens, kK, 34);
  const auto packed = packed_of(p);
  const auto y = run_kernel(packed_kernel_ref(TensorType::IQ2_XXS), packed, p, a, kTokens);
  const QuantDot* qd = quant_dot_ref(TensorType::IQ2_XXS);
  int nonzero = 0;
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t r = 0; r < kRows; ++r) {
      const float want = qd->dot(p.view.row(r), a.q8.data() + t * a.view.row_bytes, kK);
      EXPECT_EQ(y[static_cast<size_t>(t * kRows + r)], want) << "t=" << t << " r=" << r;
      nonzero += want != 0.0f;
    }
  }
  EXPECT_GT(nonzero, kTokens * kRows / 2);
}

// The many-token AVX2 kernel (weights decoded once per call) equals the
// layout's reference bit for bit: one call per group with every token, for
// counts below, at and above its pass of 64 tokens, from a nonzero first token.
TEST(PackedIq2Xxs, WideAvx2KernelEqualsReferenceBitForBit) {
  if (active_isa() < Isa::Avx2) GTEST_SKIP() << "no AVX2 on this CPU";
  const Plain p = random_iq2_xxs(kRows, kK, 35);
  constexpr int64_t kMany = 150;
  const Acts a = make_acts(TensorType::IQ2_XXS, kMany, kK, 36);
  const auto packed = packed_of(p);
  const auto want = run_kernel(packed_kernel_ref(TensorType::IQ2_XXS), packed, p, a, kMany);
  const size_t group_bytes = static_cast<size_t>(kPackRows) * p.view.row_bytes;
  for (const int64_t t0 : {int64_t{0}, int64_t{3}}) {
    for (const int64_t nt : {int64_t{1}, int64_t{16}, int64_t{64}, int64_t{80}, kMany - t0}) {
      std::vector<float> y(static_cast<size_t>(nt * kRows), -1.0f);
      for (int64_t g = 0; g < kRows / kPackRows; ++g) {
        packed_iq2_xxs_wide_avx2(packed.data() + g * group_bytes, a.view, t0, nt, y.data() + g * kPackRows, kRows);
      }
      for (int64_t t = 0; t < nt; ++t) {
        for (int64_t r = 0; r < kRows; ++r) {
          const float got = y[static_cast<size_t>(t * kRows + r)], ref = want[static_cast<size_t>((t0 + t) * kRows + r)];
          EXPECT_EQ(std::memcmp(&got, &ref, sizeof(float)), 0) << "t0=" << t0 << " nt=" << nt << " t=" << t << " r=" << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu
