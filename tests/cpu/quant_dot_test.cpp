// Quantized dot products: the activation quantizer against the round-trip
// definition (act_quant.h), and every SIMD level against the reference, and
// the reference against dequantized weights times round-tripped activations.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/dot/act_quant.h"
#include "cpu/dot/quant_dot.h"
#include "gguf/tensor_type.h"
#include "quant/blocks.h"
#include "quant/type_traits.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

const TensorType kTypes[] = {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K};

TEST(QuantDot, ReferenceEqualsDequantizedProduct) {
  const int64_t k = 512;
  for (TensorType t : kTypes) {
    const QuantDot* ref = quant_dot_ref(t);
    ASSERT_NE(ref, nullptr);
    const quant::TypeTraits& tt = quant::type_traits(t);
    const auto wf = test::random_floats(k, 1);
    std::vector<uint8_t> w(tensor_row_bytes(t, k));
    tt.from_float(wf.data(), w.data(), k, nullptr);
    std::vector<float> wd(k);
    tt.to_float_ref(w.data(), wd.data(), k);
    for (uint32_t seed : {2u, 3u, 4u}) {
      const auto x = test::random_floats(k, seed, -3.0f, 3.0f);
      std::vector<float> xq(k);
      act_quant_round_trip(ref->act, x.data(), xq.data(), k);
      std::vector<uint8_t> a(ref->act_row_bytes(k));
      ref->quantize(x.data(), a.data(), k);
      double expect = 0;
      for (int64_t i = 0; i < k; ++i) expect += static_cast<double>(wd[i]) * xq[i];
      EXPECT_NEAR(ref->dot(w.data(), a.data(), k), expect, 1e-4 * (1 + std::fabs(expect))) << tensor_type_name(t);
    }
  }
}

TEST(QuantDot, FastPathsEqualReference) {
  if (detected_isa() != Isa::Avx512) GTEST_SKIP() << "no AVX-512 on this machine";
  for (int64_t k : {256, 512, 4096}) {
    for (TensorType t : kTypes) {
      const QuantDot* ref = quant_dot_ref(t);
      const QuantDot* fast = quant_dot_avx512(t);
      ASSERT_NE(fast, nullptr);
      const auto wf = test::random_floats(k, 5);
      std::vector<uint8_t> w(tensor_row_bytes(t, k));
      quant::type_traits(t).from_float(wf.data(), w.data(), k, nullptr);
      const auto x = test::random_floats(k, 6, -10.0f, 10.0f);
      std::vector<uint8_t> a_ref(ref->act_row_bytes(k)), a_fast(fast->act_row_bytes(k));
      ref->quantize(x.data(), a_ref.data(), k);
      fast->quantize(x.data(), a_fast.data(), k);
      EXPECT_EQ(a_ref, a_fast) << tensor_type_name(t) << " k=" << k;  // quantization is exact
      const float r = ref->dot(w.data(), a_ref.data(), k);
      const float f = fast->dot(w.data(), a_ref.data(), k);
      EXPECT_NEAR(f, r, 1e-5 * (1 + std::fabs(r))) << tensor_type_name(t) << " k=" << k;
    }
  }
}

// The AVX2 dots (Q4_0, Q8_0) equal the reference bit for bit: the integer
// sums are exact and the float steps the same. Q8_0 rows get -128 weights
// too (a valid byte the quantizer never writes: the sign trick's edge).
TEST(QuantDot, Avx2EqualsReferenceBitForBit) {
  if (detected_isa() < Isa::Avx2) GTEST_SKIP() << "no AVX2 on this machine";
  constexpr int8_t kMostNegative = -128;
  for (int64_t k : {32, 256, 4096}) {
    for (TensorType t : {TensorType::Q4_0, TensorType::Q8_0}) {
      const QuantDot* ref = quant_dot_ref(t);
      const QuantDot* fast = quant_dot_avx2(t);
      ASSERT_NE(fast, nullptr);
      ASSERT_EQ(fast, find_quant_dot(t, Isa::Avx2));
      for (uint32_t seed : {7u, 8u, 9u}) {
        const auto wf = test::random_floats(k, seed, -4.0f, 4.0f);
        std::vector<uint8_t> w(tensor_row_bytes(t, k));
        quant::type_traits(t).from_float(wf.data(), w.data(), k, nullptr);
        if (t == TensorType::Q8_0) {
          auto* blocks = reinterpret_cast<quant::BlockQ8_0*>(w.data());
          for (int64_t b = 0; b < k / quant::kQK; ++b) blocks[b].qs[b % quant::kQK] = kMostNegative;
        }
        const auto x = test::random_floats(k, seed + 10, -10.0f, 10.0f);
        std::vector<uint8_t> a(ref->act_row_bytes(k));
        ref->quantize(x.data(), a.data(), k);
        const float r = ref->dot(w.data(), a.data(), k);
        const float f = fast->dot(w.data(), a.data(), k);
        EXPECT_EQ(std::memcmp(&r, &f, sizeof r), 0) << tensor_type_name(t) << " k=" << k << ": " << f << " vs " << r;
      }
    }
  }
}

// Tiles of every shape equal the single dot products bit for bit.
TEST(QuantDot, TilesEqualDots) {
  if (detected_isa() != Isa::Avx512) GTEST_SKIP() << "no AVX-512 on this machine";
  const int64_t k = 256;
  for (TensorType t : kTypes) {
    const QuantDot* q = quant_dot_avx512(t);
    if (q->tile == nullptr) continue;
    const size_t wrb = tensor_row_bytes(t, k), arb = q->act_row_bytes(k);
    std::vector<uint8_t> w(4 * wrb), a(4 * arb);
    for (int r = 0; r < 4; ++r) {
      const auto wf = test::random_floats(k, 30 + r);
      quant::type_traits(t).from_float(wf.data(), w.data() + r * wrb, k, nullptr);
      const auto x = test::random_floats(k, 40 + r, -5.0f, 5.0f);
      q->quantize(x.data(), a.data() + r * arb, k);
    }
    for (int64_t nr = 1; nr <= 4; ++nr) {
      for (int64_t nt = 1; nt <= 4; ++nt) {
        float y[16];
        q->tile(w.data(), wrb, nr, a.data(), arb, nt, k, y, 4);
        for (int64_t tt = 0; tt < nt; ++tt) {
          for (int64_t r = 0; r < nr; ++r) {
            EXPECT_EQ(y[tt * 4 + r], q->dot(w.data() + r * wrb, a.data() + tt * arb, k)) << tensor_type_name(t);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu
