// Every level (the scalar reference, x86 and NEON) sums in one order: the order of llama.cpp's
// AVX-512 build, in which the goldens of ../shared were made (cpu/vec_ops.h
// describes it). A plain scalar model of that order, written here from the
// description alone, must give the same bits as each level's dot products
// and softmax sums. On an AVX2-only host this is what keeps the model
// goldens at their printed precision (before, AVX2 summed in 8-lane order
// and four goldens drifted up to 3e-3 from position 28 on).
#include <array>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/fast_exp.h"
#include "cpu/features.h"
#include "cpu/vec_ops.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

using Lanes = std::array<float, 16>;

// _mm512_reduce_add_ps: upper 8 + lower 8, then upper 4 + lower 4, then
// (0 + 2) + (1 + 3).
float reduce16(const Lanes& v) {
  float t8[8], t4[4];
  for (int i = 0; i < 8; ++i) t8[i] = v[i + 8] + v[i];
  for (int i = 0; i < 4; ++i) t4[i] = t8[i + 4] + t8[i];
  return (t4[0] + t4[2]) + (t4[1] + t4[3]);
}

template <typename Get>
float one_accumulator(const Get& get, int64_t n) {
  Lanes acc{};
  for (int64_t i = 0; i < n; ++i) acc[i % 16] = std::fma(get.a(i), get.b(i), acc[i % 16]);
  return reduce16(acc);
}

// Four accumulators over blocks of 64, combined (0+2)+(1+3); np a multiple of 64.
template <typename Get>
float blocks64(const Get& get, int64_t np) {
  std::array<Lanes, 4> acc{};
  for (int64_t i = 0; i < np; ++i) {
    Lanes& lane = acc[(i % 64) / 16];
    lane[i % 16] = std::fma(get.a(i), get.b(i), lane[i % 16]);
  }
  Lanes c;
  for (int l = 0; l < 16; ++l) c[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  return reduce16(c);
}

struct GetF32 {
  const float* pa;
  const float* pb;
  float a(int64_t i) const { return pa[i]; }
  float b(int64_t i) const { return pb[i]; }
};
struct GetF16 {
  const uint16_t* pa;
  const uint16_t* pb;
  float a(int64_t i) const { return fp16_to_fp32(pa[i]); }
  float b(int64_t i) const { return fp16_to_fp32(pb[i]); }
};

float model_dot_f32_unrolled(const float* a, const float* b, int64_t n) {
  const int64_t np = n - n % 64;
  float sum = np > 0 ? blocks64(GetF32{a, b}, np) : 0.0f;
  // Products rounded and added in order, in groups of 16 and then one of 8;
  // the last < 8 fused.
  const int64_t rest = n - np;
  const int64_t added = np + rest / 16 * 16 + (rest % 16 >= 8 ? 8 : 0);
  int64_t i = np;
  for (; i < added; ++i) sum += a[i] * b[i];
  for (; i < n; ++i) sum = std::fma(a[i], b[i], sum);
  return sum;
}

float model_dot_f32(const float* a, const float* b, int64_t n) {
  return n % 16 == 0 ? one_accumulator(GetF32{a, b}, n) : model_dot_f32_unrolled(a, b, n);
}

float model_dot_f16_unrolled(const uint16_t* a, const uint16_t* b, int64_t n) {
  const int64_t np = n - n % 64;
  double sum = np > 0 ? blocks64(GetF16{a, b}, np) : 0.0;
  for (int64_t i = np; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(a[i]) * fp16_to_fp32(b[i]));
  return static_cast<float>(sum);
}

float model_dot_f16(const uint16_t* a, const uint16_t* b, int64_t n) {
  return n % 16 == 0 ? one_accumulator(GetF16{a, b}, n) : model_dot_f16_unrolled(a, b, n);
}

// vdpbf16ps: lane l takes the pair (2l, 2l+1) of each 32 values; exact
// products, the odd one added first, each addition rounded; zeros past n.
float model_dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  Lanes acc{};
  auto prod = [&](int64_t i) { return i < n ? bf16_to_fp32(a[i]) * bf16_to_fp32(b[i]) : 0.0f; };
  for (int64_t base = 0; base < n; base += 32) {
    for (int l = 0; l < 16; ++l) acc[l] = (acc[l] + prod(base + 2 * l + 1)) + prod(base + 2 * l);
  }
  return reduce16(acc);
}

// Whole groups of 16 through fast_exp, each group's 16 values reduced as
// above and added in double; the rest libm's expf added one by one.
double model_softmax_exp(std::vector<float>& x, float max) {
  const int64_t n = static_cast<int64_t>(x.size());
  const int64_t fast = n - n % 16;
  double sum = 0.0;
  for (int64_t g = 0; g < fast; g += 16) {
    Lanes v;
    for (int l = 0; l < 16; ++l) v[l] = x[g + l] = fast_exp::exp_ref(x[g + l] - max);
    sum += static_cast<double>(reduce16(v));
  }
  for (int64_t i = fast; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  return sum;
}

// The scalar level (the reference, vec_ops_ref.cpp) and the SIMD levels the
// host has (x86 or NEON).
std::vector<Isa> levels_to_check() {
  std::vector<Isa> out{Isa::Scalar};
#if defined(__x86_64__)
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (static_cast<int>(isa) <= static_cast<int>(detected_isa())) out.push_back(isa);
  }
#elif defined(__aarch64__)
  if (is_neon(detected_isa())) out.push_back(Isa::Neon);  // NeonI8mm shares its table
#endif
  return out;
}

// Fresh inputs each run; the seed is printed with any failure.
uint32_t fresh_seed() { return std::random_device{}(); }

const int64_t kLengths[] = {1, 7, 8, 15, 16, 17, 24, 31, 32, 33, 63, 64, 65, 72, 100, 128, 255, 256, 1000, 4096};

TEST(VecOrder, DotsSumInTheGoldenOrder) {
  const auto levels = levels_to_check();
  if (levels.empty()) GTEST_SKIP() << "no SIMD level on this host";
  const uint32_t seed = fresh_seed();
  for (Isa isa : levels) {
    const VecOps& ops = vec_ops_for(isa);
    for (int64_t n : kLengths) {
      const auto a = test::random_floats(static_cast<size_t>(n), seed + static_cast<uint32_t>(n), -2.0f, 2.0f);
      const auto b = test::random_floats(static_cast<size_t>(n), ~seed + static_cast<uint32_t>(n), -2.0f, 2.0f);
      const auto a16 = test::to_f16(a), b16 = test::to_f16(b);
      const std::string where = isa_name(isa) + " n=" + std::to_string(n) + " seed=" + std::to_string(seed);
      EXPECT_EQ(ops.dot_f32(a.data(), b.data(), n), model_dot_f32(a.data(), b.data(), n)) << where;
      EXPECT_EQ(ops.dot_f32_unrolled(a.data(), b.data(), n), model_dot_f32_unrolled(a.data(), b.data(), n))
          << where;
      EXPECT_EQ(ops.dot_f16(a16.data(), b16.data(), n), model_dot_f16(a16.data(), b16.data(), n)) << where;
      EXPECT_EQ(ops.dot_f16_unrolled(a16.data(), b16.data(), n), model_dot_f16_unrolled(a16.data(), b16.data(), n))
          << where;
    }
  }
}

// vdpbf16ps as Intel specifies it. The scalar level, AVX2 and NEON emulate it and must give
// the same bits. An AVX-512 host runs the instruction itself, whose denormal
// flushing and intermediate rounding are the vendor's: there, within a few
// ulps of the sum's scale.
TEST(VecOrder, Bf16DotIsTheDotProductInstruction) {
  const auto levels = levels_to_check();
  if (levels.empty()) GTEST_SKIP() << "no SIMD level on this host";
  const uint32_t seed = fresh_seed();
  for (Isa isa : levels) {
    const VecOps& ops = vec_ops_for(isa);
    for (int64_t n : kLengths) {
      const auto a = test::to_bf16(test::random_floats(static_cast<size_t>(n), seed ^ 0x5bd1e995u, -2.0f, 2.0f));
      const auto b = test::to_bf16(test::random_floats(static_cast<size_t>(n), seed + 17u, -2.0f, 2.0f));
      const float want = model_dot_bf16(a.data(), b.data(), n);
      const float got = ops.dot_bf16(a.data(), b.data(), n);
      if (isa != Isa::Avx512) {
        EXPECT_EQ(got, want) << isa_name(isa) << " n=" << n << " seed=" << seed;
      } else {
        double scale = 0;
        for (int64_t i = 0; i < n; ++i) scale += std::fabs(bf16_to_fp32(a[i]) * bf16_to_fp32(b[i]));
        EXPECT_NEAR(got, want, 4 * 0x1p-24 * scale) << isa_name(isa) << " n=" << n << " seed=" << seed;
      }
    }
  }
}

TEST(VecOrder, SoftmaxSumsInTheGoldenOrder) {
  const auto levels = levels_to_check();
  if (levels.empty()) GTEST_SKIP() << "no SIMD level on this host";
  const uint32_t seed = fresh_seed();
  for (Isa isa : levels) {
    const VecOps& ops = vec_ops_for(isa);
    for (int64_t n : kLengths) {
      auto x = test::random_floats(static_cast<size_t>(n), seed * 3u + static_cast<uint32_t>(n), -30.0f, 5.0f);
      auto expect = x;
      const double want = model_softmax_exp(expect, 5.0f);
      const double got = ops.softmax_exp(x.data(), n, 5.0f);
      EXPECT_EQ(got, want) << isa_name(isa) << " n=" << n << " seed=" << seed;
      EXPECT_EQ(x, expect) << isa_name(isa) << " n=" << n << " seed=" << seed;
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu
