// The threaded matrix product against the plain reference for the float
// weight types and (through the quant registry) a few quantized types.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "core/error.h"
#include "cpu/features.h"
#include "cpu/matmul.h"
#include "gguf/tensor_type.h"
#include "quant/type_traits.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

struct Weights {
  std::vector<uint8_t> bytes;
  MatView view;
};

Weights make_weights(TensorType type, int64_t n, int64_t k, uint32_t seed) {
  const auto f = test::random_floats(static_cast<size_t>(n * k), seed);
  Weights w;
  const uint64_t row_bytes = tensor_row_bytes(type, static_cast<uint64_t>(k));
  w.bytes.resize(row_bytes * static_cast<uint64_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    uint8_t* dst = w.bytes.data() + r * row_bytes;
    const float* src = f.data() + r * k;
    if (type == TensorType::F32) {
      std::memcpy(dst, src, row_bytes);
    } else if (type == TensorType::F16 || type == TensorType::BF16) {
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t h = type == TensorType::F16 ? fp32_to_fp16(src[i]) : fp32_to_bf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    } else {
      quant::type_traits(type).from_float(src, dst, k, nullptr);
    }
  }
  w.view = MatView{type, w.bytes.data(), k, n, row_bytes};
  return w;
}

// Relative error bound for a type's operand rounding: f32 exact operands,
// f16 activations 2^-11, bf16 2^-8, quantized types compare with the same
// dequantized rows so only summation order differs.
double operand_tolerance(TensorType t) {
  switch (t) {
    case TensorType::F16:
      return 2e-3;
    case TensorType::BF16:
      return 1e-2;
    default:
      return 1e-4;
  }
}

void check_type(TensorType type, int64_t m, int64_t n, int64_t k, int threads) {
  const Weights w = make_weights(type, n, k, 11);
  const auto x = test::random_floats(static_cast<size_t>(m * k), 12);
  std::vector<float> y(static_cast<size_t>(m * n)), y_ref(static_cast<size_t>(m * n));
  ThreadPool pool(threads);
  MatmulScratch scratch;
  matmul(w.view, x.data(), m, y.data(), pool, scratch);
  matmul_ref(w.view, x.data(), m, y_ref.data());
  // Scale: |x|·|w| summed, ~ k/4 for uniform(-1,1) inputs.
  const double scale = static_cast<double>(k) / 4.0;
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_NEAR(y[i], y_ref[i], operand_tolerance(type) * scale)
        << tensor_type_name(type) << " m=" << m << " i=" << i << " threads=" << threads;
  }
}

TEST(Matmul, FloatTypesEveryIsa) {
  const Isa saved = active_isa();
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    set_isa(isa);
    for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
      for (int64_t m : {1, 3, 70}) check_type(t, m, 37, 96, 2);
    }
  }
  set_isa(saved);
}

TEST(Matmul, QuantizedTypesThroughDequant) {
  for (TensorType t : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
    const quant::TypeTraits* tt = quant::find_type_traits(t);
    if (tt == nullptr || tt->from_float == nullptr) continue;
    for (int64_t m : {1, 5}) check_type(t, m, 19, 512, 2);
  }
}

TEST(Matmul, SingleThreadEqualsMultiThread) {
  const Weights w = make_weights(TensorType::F16, 50, 64, 5);
  const auto x = test::random_floats(4 * 64, 6);
  std::vector<float> y1(4 * 50), y2(4 * 50);
  MatmulScratch s1, s2;
  ThreadPool p1(1), p3(3);
  matmul(w.view, x.data(), 4, y1.data(), p1, s1);
  matmul(w.view, x.data(), 4, y2.data(), p3, s2);
  EXPECT_EQ(y1, y2);  // same row dot products, only distributed differently
}

TEST(Matmul, RejectsUnknownType) {
  MatView w{TensorType::I32, nullptr, 4, 4, 16};
  float x[4] = {}, y[4] = {};
  ThreadPool pool(1);
  MatmulScratch s;
  EXPECT_THROW(matmul(w, x, 1, y, pool, s), InvalidArgument);
}

}  // namespace
}  // namespace ferrite::cpu
