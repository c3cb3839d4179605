// Every SIMD level of the vector primitives against the plain reference on
// random inputs of awkward lengths (tails shorter than a vector included).
#include <cmath>

#include <gtest/gtest.h>

#include "cpu/features.h"
#include "cpu/vec_ops.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

using test::random_floats;

const int64_t kLengths[] = {1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 100, 255, 256, 1000, 4096};

std::vector<Isa> fast_levels() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (static_cast<int>(isa) <= static_cast<int>(detected_isa())) out.push_back(isa);
  }
  return out;
}

// Sum of |a_i b_i|: the scale a dot product's rounding error is relative to.
double abs_dot(const std::vector<float>& a, const std::vector<float>& b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::fabs(static_cast<double>(a[i]) * b[i]);
  return s;
}

TEST(VecOps, DetectsSomething) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 levels (neon_test.cpp covers the ARM one)";
#endif
  // This project's CI and dev machines are x86-64 with at least AVX2.
  EXPECT_GE(static_cast<int>(detected_isa()), static_cast<int>(Isa::Avx2));
  EXPECT_EQ(set_isa(Isa::Scalar), Isa::Scalar);
  EXPECT_EQ(active_isa(), Isa::Scalar);
  EXPECT_EQ(set_isa(Isa::Avx512), detected_isa());
}

TEST(VecOps, DotsMatchReference) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 levels (neon_test.cpp covers the ARM one)";
#endif
  const VecOps& ref = vec_ops_ref();
  ASSERT_FALSE(fast_levels().empty());
  for (Isa isa : fast_levels()) {
    const VecOps& fast = vec_ops_for(isa);
    for (int64_t n : kLengths) {
      const auto a = random_floats(static_cast<size_t>(n), 1 + static_cast<uint32_t>(n));
      const auto b = random_floats(static_cast<size_t>(n), 1000 + static_cast<uint32_t>(n));
      const double tol = 1e-5 * abs_dot(a, b, n) + 1e-6;
      EXPECT_NEAR(fast.dot_f32(a.data(), b.data(), n), ref.dot_f32(a.data(), b.data(), n), tol)
          << isa_name(isa) << " n=" << n;
      const auto a16 = test::to_f16(a), b16 = test::to_f16(b);
      EXPECT_NEAR(fast.dot_f16(a16.data(), b16.data(), n), ref.dot_f16(a16.data(), b16.data(), n), tol)
          << isa_name(isa) << " n=" << n;
      const auto ab = test::to_bf16(a), bb = test::to_bf16(b);
      EXPECT_NEAR(fast.dot_bf16(ab.data(), bb.data(), n), ref.dot_bf16(ab.data(), bb.data(), n), tol)
          << isa_name(isa) << " n=" << n;
    }
  }
}

TEST(VecOps, ConversionsAreExactlyTheReference) {
  const VecOps& ref = vec_ops_ref();
  for (Isa isa : fast_levels()) {
    const VecOps& fast = vec_ops_for(isa);
    for (int64_t n : kLengths) {
      // Wide range so rounding, subnormals and overflow are exercised.
      auto x = random_floats(static_cast<size_t>(n), 7 + static_cast<uint32_t>(n), -70000.0f, 70000.0f);
      for (int64_t i = 0; i < n; i += 3) x[i] *= 1e-7f;
      std::vector<uint16_t> h_ref(n), h_fast(n), b_ref(n), b_fast(n);
      ref.f32_to_f16(x.data(), h_ref.data(), n);
      fast.f32_to_f16(x.data(), h_fast.data(), n);
      EXPECT_EQ(h_ref, h_fast) << isa_name(isa) << " n=" << n;
      ref.f32_to_bf16(x.data(), b_ref.data(), n);
      fast.f32_to_bf16(x.data(), b_fast.data(), n);
      EXPECT_EQ(b_ref, b_fast) << isa_name(isa) << " n=" << n;
      std::vector<float> f_ref(n), f_fast(n);
      ref.f16_to_f32(h_ref.data(), f_ref.data(), n);
      fast.f16_to_f32(h_ref.data(), f_fast.data(), n);
      EXPECT_EQ(f_ref, f_fast) << isa_name(isa) << " n=" << n;
    }
  }
}

TEST(VecOps, AxpyMatchesReference) {
  const VecOps& ref = vec_ops_ref();
  for (Isa isa : fast_levels()) {
    const VecOps& fast = vec_ops_for(isa);
    for (int64_t n : kLengths) {
      const auto x16 = test::to_f16(random_floats(static_cast<size_t>(n), 3));
      auto y_ref = random_floats(static_cast<size_t>(n), 4);
      auto y_fast = y_ref;
      ref.axpy_f16(0.37f, x16.data(), y_ref.data(), n);
      fast.axpy_f16(0.37f, x16.data(), y_fast.data(), n);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y_fast[i], y_ref[i], 1e-6f) << isa_name(isa) << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu

namespace ferrite::cpu {
namespace {

// The register-blocked tiles compute each output exactly as the level's own
// dot product does (same summation order), for every tile shape.
TEST(VecOps, TilesEqualDotsExactly) {
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (static_cast<int>(isa) > static_cast<int>(detected_isa())) continue;
    const VecOps& ops = vec_ops_for(isa);
    for (int64_t n : {48, 64, 100, 256}) {
      const int64_t stride = n + 16;
      const auto w = random_floats(static_cast<size_t>(4 * stride), 21);
      const auto a = random_floats(static_cast<size_t>(4 * stride), 22);
      const auto w16 = test::to_f16(w), a16 = test::to_f16(a);
      for (int64_t nr = 1; nr <= kTileRows; ++nr) {
        for (int64_t nt = 1; nt <= kTileTokens; ++nt) {
          float y[16], y16[16];
          ops.tile_f32(w.data(), stride, nr, a.data(), stride, nt, n, y, 4);
          ops.tile_f16(w16.data(), stride, nr, a16.data(), stride, nt, n, y16, 4);
          for (int64_t t = 0; t < nt; ++t) {
            for (int64_t r = 0; r < nr; ++r) {
              EXPECT_EQ(y[t * 4 + r], ops.dot_f32(w.data() + r * stride, a.data() + t * stride, n))
                  << isa_name(isa) << " n=" << n;
              EXPECT_EQ(y16[t * 4 + r], ops.dot_f16(w16.data() + r * stride, a16.data() + t * stride, n))
                  << isa_name(isa) << " n=" << n;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu
