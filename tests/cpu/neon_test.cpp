// The aarch64 NEON levels against the plain reference on random inputs: the
// Q4_0/Q8_0 activation quantizer byte for byte, their quantized dots and
// tiles bit for bit (at Neon and, where the CPU has it, NeonI8mm with its
// SMMLA tiles), the f32/f16/bf16 dots within the
// tolerance vec_ops_test.cpp gives the x86 levels (their exact order is
// vec_order_test.cpp's), conversions, softmax values, SiLU and rotation
// exactly; level detection and bookkeeping. These run in the aarch64 cross
// build under qemu (scripts/test-neon) and skip on x86-64, where only the
// level bookkeeping is checked.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/features.h"
#include "cpu/matmul.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/thread_pool.h"
#include "cpu/vec_ops.h"
#include "gguf/tensor_type.h"
#include "quant/blocks.h"
#include "quant/type_traits.h"
#include "neon_levels.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

using test::random_floats;

using test::IsaGuard;
using test::neon_levels;

TEST(NeonLevel, NeverChosenAcrossArchitectures) {
  IsaGuard guard;
  EXPECT_EQ(isa_name(Isa::Neon), "neon");
  EXPECT_EQ(isa_name(Isa::NeonI8mm), "neon_i8mm");
  if (test::have_neon()) {
    EXPECT_EQ(set_isa(Isa::Neon), Isa::Neon);
    EXPECT_EQ(active_isa(), Isa::Neon);
    EXPECT_EQ(set_isa(Isa::NeonI8mm), detected_isa());  // clamped to what the CPU has
    EXPECT_EQ(set_isa(Isa::Avx2), Isa::Scalar);
    EXPECT_EQ(set_isa(Isa::Avx512), Isa::Scalar);
    EXPECT_EQ(set_isa(Isa::Scalar), Isa::Scalar);
  } else {
    EXPECT_EQ(set_isa(Isa::Neon), Isa::Scalar);
    EXPECT_EQ(set_isa(Isa::NeonI8mm), Isa::Scalar);
    EXPECT_EQ(active_isa(), Isa::Scalar);
  }
  // The x86 dispatch tests are false for the ARM levels.
  for (Isa isa : {Isa::Neon, Isa::NeonI8mm}) {
    EXPECT_TRUE(is_neon(isa));
    EXPECT_FALSE(isa >= Isa::Avx2);
    EXPECT_FALSE(isa >= Isa::Avx512);
  }
  EXPECT_FALSE(is_neon(Isa::Scalar));
  EXPECT_FALSE(is_neon(Isa::Avx2));
}

// The level follows HWCAP/HWCAP2. scripts/test-neon runs this test under
// three emulated CPUs and states what each has in FERRITE_EXPECT_ISA:
// qemu's default ("max": dotprod, fp16, i8mm, bf16), a Cortex-A76 (dotprod
// and fp16, no i8mm) and a Cortex-A53 (neither: the scalar level).
TEST(NeonLevel, DetectedFromHwcaps) {
#if defined(__aarch64__)
  const CpuFeatures& f = cpu_features();
  EXPECT_TRUE(f.asimd);
  const Isa want = f.asimddp && f.fp16 ? (f.i8mm ? Isa::NeonI8mm : Isa::Neon) : Isa::Scalar;
  EXPECT_EQ(detected_isa(), want);
  if (const char* expect = std::getenv("FERRITE_EXPECT_ISA")) {
    EXPECT_EQ(isa_name(detected_isa()), expect);
  }
#else
  EXPECT_FALSE(cpu_features().asimddp);
  EXPECT_FALSE(cpu_features().i8mm);
  EXPECT_FALSE(is_neon(detected_isa()));
#endif
}

// A quantized row of k weights of `type` from random floats.
std::vector<uint8_t> quantized_row(TensorType type, int64_t k, uint32_t seed) {
  const auto wf = random_floats(static_cast<size_t>(k), seed, -4.0f, 4.0f);
  std::vector<uint8_t> w(tensor_row_bytes(type, static_cast<uint64_t>(k)));
  quant::type_traits(type).from_float(wf.data(), w.data(), k, nullptr);
  return w;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// k covers whole steps of four blocks and every remainder (1, 2, 3 blocks).
const int64_t kQuantLengths[] = {32, 64, 96, 128, 160, 256, 4096, 4096 + 96};

const TensorType kQ8_0Types[] = {TensorType::Q4_0, TensorType::Q8_0};

TEST(NeonQuantDot, EqualsReferenceBitForBit) {
  SKIP_WITHOUT_NEON();
  constexpr int8_t kMostNegative = -128;  // valid Q8_0 byte the quantizer never writes
  for (Isa isa : neon_levels()) {
    for (TensorType t : kQ8_0Types) {
      const QuantDot* ref = quant_dot_ref(t);
      const QuantDot* fast = find_quant_dot(t, isa);
      ASSERT_NE(fast, nullptr);
      ASSERT_NE(fast, ref) << tensor_type_name(t) << ": the NEON level has its own dot";
      EXPECT_EQ(fast->act, ref->act);
      ASSERT_NE(fast->tile, nullptr);
      for (int64_t k : kQuantLengths) {
        for (uint32_t seed : {7u, 8u, 9u}) {
          auto w = quantized_row(t, k, seed);
          if (t == TensorType::Q8_0) {
            auto* blocks = reinterpret_cast<quant::BlockQ8_0*>(w.data());
            for (int64_t b = 0; b < k / quant::kQK; ++b) blocks[b].qs[b % quant::kQK] = kMostNegative;
          }
          const auto x = random_floats(static_cast<size_t>(k), seed + 10, -10.0f, 10.0f);
          std::vector<uint8_t> a(ref->act_row_bytes(k));
          ref->quantize(x.data(), a.data(), k);
          const float r = ref->dot(w.data(), a.data(), k);
          const float f = fast->dot(w.data(), a.data(), k);
          EXPECT_TRUE(same_bits(r, f)) << isa_name(isa) << " " << tensor_type_name(t) << " k=" << k << ": " << f
                                       << " vs " << r;
        }
      }
    }
  }
}

// Random bytes everywhere but the scales (finite f16 values of mixed
// magnitude): every nibble and byte value, activations included.
void random_row_bytes(TensorType t, int64_t k, uint32_t seed, std::vector<uint8_t>& w, std::vector<uint8_t>& a) {
  std::mt19937 rng(seed);
  w.assign(tensor_row_bytes(t, static_cast<uint64_t>(k)), 0);
  a.assign(quant_dot_ref(t)->act_row_bytes(k), 0);
  for (auto& byte : w) byte = static_cast<uint8_t>(rng());
  for (auto& byte : a) byte = static_cast<uint8_t>(rng());
  const auto scales = random_floats(2 * static_cast<size_t>(k / quant::kQK), seed, -2.0f, 2.0f);
  const size_t w_block = tensor_row_bytes(t, quant::kQK), a_block = sizeof(quant::BlockQ8_0);
  for (int64_t b = 0; b < k / quant::kQK; ++b) {
    const uint16_t dw = fp32_to_fp16(scales[2 * b] * (b % 3 == 0 ? 1e-3f : 1.0f));
    const uint16_t da = fp32_to_fp16(scales[2 * b + 1]);
    std::memcpy(w.data() + b * w_block, &dw, sizeof dw);  // d leads both block layouts
    std::memcpy(a.data() + b * a_block, &da, sizeof da);
  }
}

TEST(NeonQuantDot, EqualsReferenceOnRandomBytes) {
  SKIP_WITHOUT_NEON();
  const int64_t k = 1024 + 64;
  for (Isa isa : neon_levels()) {
    for (TensorType t : kQ8_0Types) {
      const QuantDot* ref = quant_dot_ref(t);
      const QuantDot* fast = find_quant_dot(t, isa);
      for (uint32_t seed : {21u, 22u, 23u, 24u}) {
        std::vector<uint8_t> w, a;
        random_row_bytes(t, k, seed, w, a);
        const float r = ref->dot(w.data(), a.data(), k);
        const float f = fast->dot(w.data(), a.data(), k);
        EXPECT_TRUE(same_bits(r, f)) << isa_name(isa) << " " << tensor_type_name(t) << " seed=" << seed << ": " << f
                                     << " vs " << r;
      }
    }
  }
}

// The NEON Q8_0 activation quantizer (both tables use it) writes the
// reference's bytes: random rows over 20 magnitudes (a fresh seed each run,
// printed on failure), and blocks at the corners of the format: all zeros
// (both signs), the largest magnitude with both signs, exact halves (round
// half to even), every integer -127..127, and tiny normal values.
TEST(NeonQuantDot, Q8_0QuantizerEqualsReferenceByteForByte) {
  SKIP_WITHOUT_NEON();
  constexpr int64_t kQK = quant::kQK;
  std::vector<std::vector<float>> rows;
  const uint32_t fresh = std::random_device{}();
  for (uint32_t i = 0; i < 20; ++i) {
    const float range = std::ldexp(1.0f, static_cast<int>(i) - 10);  // 2^-10 .. 2^9
    rows.push_back(random_floats(static_cast<size_t>(32 * kQK), fresh + i, -range, range));
  }
  rows.emplace_back(kQK, 0.0f);
  rows.emplace_back(kQK, -0.0f);
  {
    auto v = random_floats(static_cast<size_t>(kQK), 5, -1.0f, 1.0f);
    v[3] = -4.0f;
    v[20] = 4.0f;
    rows.push_back(v);
  }
  {
    std::vector<float> v(static_cast<size_t>(kQK));  // amax 127: id = 1, each value a tie
    for (int64_t j = 0; j < kQK; ++j) v[j] = static_cast<float>(j - 16) + 0.5f;
    v[0] = 127.0f;
    rows.push_back(v);
  }
  {
    std::vector<float> v;
    for (int q = -127; q <= 127; ++q) v.push_back(static_cast<float>(q));
    v.push_back(0.0f);  // 256 values: 8 blocks
    rows.push_back(v);
  }
  rows.push_back(random_floats(static_cast<size_t>(kQK), 6, -1e-37f, 1e-37f));
  for (Isa isa : neon_levels()) {
    for (TensorType t : kQ8_0Types) {
      const QuantDot* ref = quant_dot_ref(t);
      const QuantDot* fast = find_quant_dot(t, isa);
      ASSERT_NE(fast->quantize, ref->quantize) << tensor_type_name(t) << ": the NEON level has its own quantizer";
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t k = static_cast<int64_t>(rows[i].size());
        std::vector<uint8_t> a(ref->act_row_bytes(k), 0), b(ref->act_row_bytes(k), 0xAA);
        ref->quantize(rows[i].data(), a.data(), k);
        fast->quantize(rows[i].data(), b.data(), k);
        EXPECT_EQ(a, b) << isa_name(isa) << " " << tensor_type_name(t) << " row " << i << " (fresh seed " << fresh
                        << ")";
      }
    }
  }
}

// Tiles of every shape (SDOT tiles; at NeonI8mm the SMMLA pairs, with an odd
// row or token paired with itself) equal the reference dots bit for bit and
// write nothing outside the tile.
TEST(NeonQuantDot, TilesOfEveryShapeEqualReference) {
  SKIP_WITHOUT_NEON();
  constexpr int kMax = 4;
  constexpr int64_t kK = 32 * 13;  // one whole step of four blocks short of four, and odd
  constexpr int64_t kStride = 7;   // y row stride, wider than any tile
  for (Isa isa : neon_levels()) {
    for (TensorType t : kQ8_0Types) {
      const QuantDot* ref = quant_dot_ref(t);
      const QuantDot* q = find_quant_dot(t, isa);
      const size_t wrb = tensor_row_bytes(t, kK), arb = q->act_row_bytes(kK);
      std::vector<uint8_t> w(kMax * wrb), a(kMax * arb);
      for (int r = 0; r < kMax; ++r) {
        std::vector<uint8_t> wr, ar;
        random_row_bytes(t, kK, 40 + r, wr, ar);
        if (r % 2 == 1) {  // quantized from floats
          wr = quantized_row(t, kK, 50 + r);
          const auto x = random_floats(kK, 60 + r, -5.0f, 5.0f);
          ref->quantize(x.data(), ar.data(), kK);
        }
        std::memcpy(w.data() + r * wrb, wr.data(), wrb);
        std::memcpy(a.data() + r * arb, ar.data(), arb);
      }
      for (int nr = 1; nr <= kMax; ++nr) {
        for (int nt = 1; nt <= kMax; ++nt) {
          std::vector<float> y(kMax * kStride, -1.0f);
          q->tile(w.data(), wrb, nr, a.data(), arb, nt, kK, y.data(), kStride);
          for (int64_t i = 0; i < kMax * kStride; ++i) {
            const int64_t tt = i / kStride, r = i % kStride;
            if (tt < nt && r < nr) {
              const float want = ref->dot(w.data() + r * wrb, a.data() + tt * arb, kK);
              EXPECT_TRUE(same_bits(y[i], want)) << isa_name(isa) << " " << tensor_type_name(t) << " tile " << nr
                                                 << "x" << nt << " r=" << r << " t=" << tt;
            } else {
              EXPECT_EQ(y[i], -1.0f) << "outside tile " << nr << "x" << nt;
            }
          }
        }
      }
    }
  }
}

// Sum of |a_i b_i|: the scale a dot product's rounding error is relative to.
double abs_dot(const std::vector<float>& a, const std::vector<float>& b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::fabs(static_cast<double>(a[i]) * b[i]);
  return s;
}

const int64_t kLengths[] = {1, 3, 4, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 255, 256, 1000, 4096};

TEST(NeonVecOps, DotsMatchReference) {
  SKIP_WITHOUT_NEON();
  const VecOps& ref = vec_ops_ref();
  const VecOps& fast = vec_ops_for(Isa::Neon);
  ASSERT_NE(&fast, &ref);
  for (int64_t n : kLengths) {
    const auto a = random_floats(static_cast<size_t>(n), 1 + static_cast<uint32_t>(n));
    const auto b = random_floats(static_cast<size_t>(n), 1000 + static_cast<uint32_t>(n));
    const double tol = 1e-5 * abs_dot(a, b, n) + 1e-6;
    EXPECT_NEAR(fast.dot_f32(a.data(), b.data(), n), ref.dot_f32(a.data(), b.data(), n), tol) << "n=" << n;
    EXPECT_NEAR(fast.dot_f32_unrolled(a.data(), b.data(), n), ref.dot_f32(a.data(), b.data(), n), tol) << "n=" << n;
    const auto a16 = test::to_f16(a), b16 = test::to_f16(b);
    EXPECT_NEAR(fast.dot_f16(a16.data(), b16.data(), n), ref.dot_f16(a16.data(), b16.data(), n), tol) << "n=" << n;
    EXPECT_NEAR(fast.dot_f16_unrolled(a16.data(), b16.data(), n), ref.dot_f16(a16.data(), b16.data(), n), tol)
        << "n=" << n;
    const auto ab = test::to_bf16(a), bb = test::to_bf16(b);
    EXPECT_NEAR(fast.dot_bf16(ab.data(), bb.data(), n), ref.dot_bf16(ab.data(), bb.data(), n), tol) << "n=" << n;
  }
}

TEST(NeonVecOps, ConversionsAreExactlyTheReference) {
  SKIP_WITHOUT_NEON();
  const VecOps& ref = vec_ops_ref();
  const VecOps& fast = vec_ops_for(Isa::Neon);
  for (int64_t n : kLengths) {
    // Wide range so rounding, subnormals and overflow are exercised.
    auto x = random_floats(static_cast<size_t>(n), 7 + static_cast<uint32_t>(n), -70000.0f, 70000.0f);
    for (int64_t i = 0; i < n; i += 3) x[i] *= 1e-7f;
    if (n > 4) {
      x[1] = std::numeric_limits<float>::infinity();
      x[2] = -0.0f;
      x[3] = 65520.0f;  // rounds up to infinity in f16
    }
    std::vector<uint16_t> h_ref(n), h_fast(n);
    ref.f32_to_f16(x.data(), h_ref.data(), n);
    fast.f32_to_f16(x.data(), h_fast.data(), n);
    EXPECT_EQ(h_ref, h_fast) << "n=" << n;
    std::vector<float> f_ref(n), f_fast(n);
    ref.f16_to_f32(h_ref.data(), f_ref.data(), n);
    fast.f16_to_f32(h_ref.data(), f_fast.data(), n);
    EXPECT_EQ(std::memcmp(f_ref.data(), f_fast.data(), f_ref.size() * sizeof(float)), 0) << "n=" << n;
  }
}

TEST(NeonVecOps, EveryF16ValueWidensExactly) {
  SKIP_WITHOUT_NEON();
  constexpr int kF16Values = 1 << 16;
  std::vector<uint16_t> h(kF16Values);
  for (int i = 0; i < kF16Values; ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> f_ref(kF16Values), f_fast(kF16Values);
  vec_ops_ref().f16_to_f32(h.data(), f_ref.data(), kF16Values);
  vec_ops_for(Isa::Neon).f16_to_f32(h.data(), f_fast.data(), kF16Values);
  for (int i = 0; i < kF16Values; ++i) {
    if (std::isnan(f_ref[i])) {
      EXPECT_TRUE(std::isnan(f_fast[i])) << i;
    } else {
      EXPECT_TRUE(same_bits(f_ref[i], f_fast[i])) << i;
    }
  }
}

TEST(NeonVecOps, AxpyMatchesReference) {
  SKIP_WITHOUT_NEON();
  const VecOps& ref = vec_ops_ref();
  const VecOps& fast = vec_ops_for(Isa::Neon);
  for (int64_t n : kLengths) {
    const auto x16 = test::to_f16(random_floats(static_cast<size_t>(n), 3));
    auto y_ref = random_floats(static_cast<size_t>(n), 4);
    auto y_fast = y_ref;
    ref.axpy_f16(0.37f, x16.data(), y_ref.data(), n);
    fast.axpy_f16(0.37f, x16.data(), y_fast.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y_fast[i], y_ref[i], 1e-6f) << "n=" << n;
  }
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// fast_exp's groups and libm's remainder give the reference's bits over a
// range wide enough for results that are 0, subnormal or infinite, plus NaN
// and infinities; the sum (added per group of 16 in the x86 order, which
// vec_order_test.cpp checks bit for bit) within rounding of the reference's
// one-by-one sum.
TEST(NeonVecOps, SoftmaxAndSiluAreExactlyTheReference) {
  SKIP_WITHOUT_NEON();
  const VecOps& ref = vec_ops_ref();
  const VecOps& fast = vec_ops_for(Isa::Neon);
  for (int64_t n : kLengths) {
    for (float range : {4.0f, 120.0f}) {
      auto x = random_floats(static_cast<size_t>(n), 90 + static_cast<uint32_t>(n), -range, range);
      if (n >= kExpGroup) {
        x[0] = std::numeric_limits<float>::quiet_NaN();
        x[1] = std::numeric_limits<float>::infinity();
        x[2] = -std::numeric_limits<float>::infinity();
        x[3] = -100.0f;  // exp of about -100 - max: subnormal or zero
      }
      auto e_ref = x, e_fast = x;
      const float max = range / 2;
      const double s_ref = ref.softmax_exp(e_ref.data(), n, max);
      const double s_fast = fast.softmax_exp(e_fast.data(), n, max);
      EXPECT_TRUE(same_floats(e_ref, e_fast)) << "n=" << n << " range=" << range;
      if (std::isnan(s_ref) || std::isinf(s_ref)) {
        EXPECT_TRUE(std::memcmp(&s_ref, &s_fast, sizeof s_ref) == 0 || (std::isnan(s_ref) && std::isnan(s_fast)))
            << "n=" << n << " range=" << range;
      } else {
        EXPECT_NEAR(s_fast, s_ref, 1e-6 * s_ref) << "n=" << n << " range=" << range;
      }
      std::vector<float> y_ref(x.size()), y_fast(x.size());
      ref.silu(x.data(), y_ref.data(), n);
      fast.silu(x.data(), y_fast.data(), n);
      EXPECT_TRUE(same_floats(y_ref, y_fast)) << "n=" << n << " range=" << range;
    }
  }
}

TEST(NeonVecOps, RotateIsExactlyTheReference) {
  SKIP_WITHOUT_NEON();
  const VecOps& ref = vec_ops_ref();
  const VecOps& fast = vec_ops_for(Isa::Neon);
  for (int64_t n : kLengths) {
    for (int64_t stride : {1, 3}) {
      const auto c = random_floats(static_cast<size_t>(n), 70);
      const auto s = random_floats(static_cast<size_t>(n), 71);
      auto a_ref = random_floats(static_cast<size_t>(n * stride), 72, -50.0f, 50.0f);
      auto b_ref = random_floats(static_cast<size_t>(n * stride), 73, -50.0f, 50.0f);
      auto a_fast = a_ref, b_fast = b_ref;
      ref.rotate(a_ref.data(), b_ref.data(), c.data(), s.data(), n, stride);
      fast.rotate(a_fast.data(), b_fast.data(), c.data(), s.data(), n, stride);
      EXPECT_TRUE(same_floats(a_ref, a_fast)) << "n=" << n << " stride=" << stride;
      EXPECT_TRUE(same_floats(b_ref, b_fast)) << "n=" << n << " stride=" << stride;
    }
  }
}

// The register-blocked tiles (pairs of rows x pairs of tokens) give each
// output its dot's bits, for lengths in both orders (multiples of 16, and
// others) and for bf16 every tail length.
TEST(NeonVecOps, TilesEqualDotsExactly) {
  SKIP_WITHOUT_NEON();
  const VecOps& ops = vec_ops_for(Isa::Neon);
  ASSERT_EQ(&vec_ops_for(Isa::NeonI8mm), &ops);  // one table for both levels
  for (int64_t n : {16, 48, 64, 100, 256, 257}) {
    const int64_t stride = n + 16;
    const auto w = random_floats(static_cast<size_t>(4 * stride), 21);
    const auto a = random_floats(static_cast<size_t>(4 * stride), 22);
    const auto w16 = test::to_f16(w), a16 = test::to_f16(a);
    const auto wb = test::to_bf16(w), ab = test::to_bf16(a);
    for (int64_t nr = 1; nr <= kTileRows; ++nr) {
      for (int64_t nt = 1; nt <= kTileTokens; ++nt) {
        float y[16], y16[16], yb[16];
        ops.tile_f32(w.data(), stride, nr, a.data(), stride, nt, n, y, 4);
        ops.tile_f16(w16.data(), stride, nr, a16.data(), stride, nt, n, y16, 4);
        ops.tile_bf16(wb.data(), stride, nr, ab.data(), stride, nt, n, yb, 4);
        for (int64_t t = 0; t < nt; ++t) {
          for (int64_t r = 0; r < nr; ++r) {
            const std::string where = "n=" + std::to_string(n) + " tile " + std::to_string(nr) + "x" +
                                      std::to_string(nt);
            EXPECT_TRUE(same_bits(y[t * 4 + r], ops.dot_f32(w.data() + r * stride, a.data() + t * stride, n)))
                << where;
            EXPECT_TRUE(same_bits(y16[t * 4 + r], ops.dot_f16(w16.data() + r * stride, a16.data() + t * stride, n)))
                << where;
            EXPECT_TRUE(same_bits(yb[t * 4 + r], ops.dot_bf16(wb.data() + r * stride, ab.data() + t * stride, n)))
                << where;
          }
        }
      }
    }
  }
}

// The whole threaded product at each NEON level equals the Scalar level's
// bit for bit for Q4_0 and Q8_0 weights (same quantized dots), one token and
// several (the tiles).
TEST(NeonMatmul, QuantizedEqualsScalarLevel) {
  SKIP_WITHOUT_NEON();
  IsaGuard guard;
  const int64_t n = 24, k = 320;
  for (TensorType t : {TensorType::Q4_0, TensorType::Q8_0}) {
    std::vector<uint8_t> bytes;
    const uint64_t row_bytes = tensor_row_bytes(t, static_cast<uint64_t>(k));
    for (int64_t r = 0; r < n; ++r) {
      const auto row = quantized_row(t, k, 100 + static_cast<uint32_t>(r));
      bytes.insert(bytes.end(), row.begin(), row.end());
    }
    const MatView w{t, bytes.data(), k, n, row_bytes};
    for (int64_t m : {1, 5}) {
      const auto x = random_floats(static_cast<size_t>(m * k), 200 + static_cast<uint32_t>(m), -3.0f, 3.0f);
      std::vector<float> y_scalar(static_cast<size_t>(m * n)), y_neon(static_cast<size_t>(m * n));
      ThreadPool pool(2);
      MatmulScratch scratch;
      set_isa(Isa::Scalar);
      matmul(w, x.data(), m, y_scalar.data(), pool, scratch);
      for (Isa isa : neon_levels()) {
        ASSERT_EQ(set_isa(isa), isa);
        matmul(w, x.data(), m, y_neon.data(), pool, scratch);
        EXPECT_EQ(std::memcmp(y_scalar.data(), y_neon.data(), y_neon.size() * sizeof(float)), 0)
            << isa_name(isa) << " " << tensor_type_name(t) << " m=" << m;
      }
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu
