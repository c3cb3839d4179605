// Quantized dot products: the activation quantizer against the round-trip
// definition (act_quant.h), and every SIMD level against the reference, and
// the reference against dequantized weights times round-tripped activations.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "cpu/act_quant.h"
#include "cpu/quant_dot.h"
#include "gguf/tensor_type.h"
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

}  // namespace
}  // namespace ferrite::cpu
