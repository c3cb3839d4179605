// AVX-512 K-quant products (quant_dot_k_avx512.cpp) and the AVX-512 Q8_K
// quantizer: the quantizer is bit-identical to the reference one, tiles of
// every shape are bit-identical to the one-row dot (the tile contract of
// quant_dot.h), and dots match the reference dots (quant_dot_ref.cpp) on
// random blocks, from both the quantizer and raw random bytes (which reach
// every scale and every bit pattern).
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/dot/act_quant.h"
#include "cpu/features.h"
#include "cpu/matmul.h"
#include "cpu/dot/quant_dot.h"
#include "gguf/tensor_type.h"
#include "quant/blocks.h"
#include "quant/type_traits.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kQKK = quant::kQKK;
const TensorType kKTypes[] = {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                               TensorType::Q6_K};

bool have_avx512() { return detected_isa() == Isa::Avx512; }

void quantize_ref(const float* x, std::vector<uint8_t>& out, int64_t k) {
  const QuantDot* ref = quant_dot_ref(TensorType::Q4_K);
  out.assign(ref->act_row_bytes(k), 0);
  ref->quantize(x, out.data(), k);
}

void quantize_fast(const float* x, std::vector<uint8_t>& out, int64_t k) {
  out.assign(static_cast<size_t>(k / kQKK) * sizeof(quant::BlockQ8_K), 0xAA);
  quantize_q8_k_avx512(x, out.data(), k);
}

TEST(Q8KQuantizer, Avx512EqualsReferenceOnRandomRows) {
  if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this machine";
  const int64_t k = 4096;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const float range = std::ldexp(1.0f, static_cast<int>(seed) - 10);  // 2^-9 .. 2^10
    const auto x = test::random_floats(k, seed, -range, range);
    std::vector<uint8_t> a, b;
    quantize_ref(x.data(), a, k);
    quantize_fast(x.data(), b, k);
    EXPECT_EQ(a, b) << "seed " << seed;
  }
}

// Blocks chosen to hit the corner cases of the definition: all zeros, the
// largest magnitude occurring twice with both signs (the first counts),
// exact halves (round half to even), signed zeros, denormals, huge values,
// and non-finite values (skipped by the maximum like the reference skips them).
TEST(Q8KQuantizer, Avx512EqualsReferenceOnCornerCases) {
  if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this machine";
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float denorm = std::numeric_limits<float>::denorm_min();
  std::vector<std::vector<float>> blocks;
  blocks.emplace_back(kQKK, 0.0f);
  blocks.emplace_back(kQKK, -0.0f);
  {
    auto v = test::random_floats(kQKK, 7);
    v[40] = -2.0f;
    v[200] = 2.0f;  // same magnitude later: -2 is the one
    blocks.push_back(v);
    v[40] = 2.0f;
    v[200] = -2.0f;
    blocks.push_back(v);
  }
  {
    std::vector<float> v(kQKK);
    for (int64_t j = 0; j < kQKK; ++j) v[j] = (static_cast<float>(j % 64) - 31.5f) / 2.0f;  // halves after scaling
    v[5] = -127.0f;
    blocks.push_back(v);
  }
  {
    std::vector<float> v(kQKK);
    for (int64_t j = 0; j < kQKK; ++j) v[j] = static_cast<float>(j - 127);  // integers, ties for d = 1
    blocks.push_back(v);
  }
  {
    auto v = test::random_floats(kQKK, 8);
    for (int64_t j = 0; j < kQKK; j += 3) v[j] = -0.0f;
    blocks.push_back(v);
  }
  {
    std::vector<float> v(kQKK, 0.0f);
    v[17] = denorm;
    v[99] = -3 * denorm;
    blocks.push_back(v);
  }
  blocks.push_back(test::random_floats(kQKK, 9, -3e38f, 3e38f));
  {
    auto v = test::random_floats(kQKK, 10);
    v[3] = nan;
    v[100] = -nan;
    blocks.push_back(v);
    v[50] = inf;
    blocks.push_back(v);
    v[50] = -inf;
    v[51] = inf;
    blocks.push_back(v);
  }
  blocks.emplace_back(kQKK, nan);
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::vector<uint8_t> a, b;
    quantize_ref(blocks[i].data(), a, kQKK);
    quantize_fast(blocks[i].data(), b, kQKK);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size())) << "corner block " << i;
  }
}

// Byte offset of the f16 super-block scale and (where the type has one) of
// the f16 super-block min.
struct ScaleFields {
  size_t d;
  size_t dmin;  // SIZE_MAX: none
};

ScaleFields scale_fields(TensorType t) {
  switch (t) {
    case TensorType::Q4_K:
      return {offsetof(quant::BlockQ4_K, d), offsetof(quant::BlockQ4_K, dmin)};
    case TensorType::Q5_K:
      return {offsetof(quant::BlockQ5_K, d), offsetof(quant::BlockQ5_K, dmin)};
    case TensorType::Q6_K:
      return {offsetof(quant::BlockQ6_K, d), SIZE_MAX};
    case TensorType::Q3_K:
      return {offsetof(quant::BlockQ3_K, d), SIZE_MAX};
    case TensorType::Q2_K:
      return {offsetof(quant::BlockQ2_K, d), offsetof(quant::BlockQ2_K, dmin)};
    default:
      ADD_FAILURE() << "no scale fields for " << tensor_type_name(t);
      return {0, SIZE_MAX};
  }
}

// A row of raw random bytes with finite f16 scales in [2^-12, 2^-4].
std::vector<uint8_t> random_raw_row(TensorType t, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> row(tensor_row_bytes(t, static_cast<uint64_t>(k)));
  for (auto& byte : row) byte = static_cast<uint8_t>(rng());
  const size_t block = row.size() / static_cast<size_t>(k / kQKK);
  const ScaleFields f = scale_fields(t);
  std::uniform_real_distribution<float> scale(1.0f / 4096, 1.0f / 16);
  for (size_t b = 0; b < row.size(); b += block) {
    const uint16_t d = fp32_to_fp16(scale(rng));
    std::memcpy(row.data() + b + f.d, &d, sizeof d);
    if (f.dmin != SIZE_MAX) {
      const uint16_t dmin = fp32_to_fp16(scale(rng));
      std::memcpy(row.data() + b + f.dmin, &dmin, sizeof dmin);
    }
  }
  return row;
}

std::vector<uint8_t> quantized_row(TensorType t, int64_t k, uint32_t seed) {
  const auto wf = test::random_floats(static_cast<size_t>(k), seed);
  std::vector<uint8_t> row(tensor_row_bytes(t, static_cast<uint64_t>(k)));
  quant::type_traits(t).from_float(wf.data(), row.data(), k, nullptr);
  return row;
}

// sum_i |w_i x_i| over the dequantized weights and round-tripped
// activations: the scale of the rounding error of any summation order.
double abs_product_sum(TensorType t, const std::vector<uint8_t>& w, const std::vector<float>& x, int64_t k) {
  std::vector<float> wd(static_cast<size_t>(k)), xq(static_cast<size_t>(k));
  quant::type_traits(t).to_float_ref(w.data(), wd.data(), k);
  act_quant_round_trip(ActQuant::Q8_K, x.data(), xq.data(), k);
  double s = 0.0;
  for (int64_t i = 0; i < k; ++i) s += std::fabs(static_cast<double>(wd[i]) * xq[i]);
  return s;
}

// The reference dots (no SIMD) against the definition: dequantized weights
// times round-tripped activations, summed in double.
TEST(QuantDotK, ReferenceDotsEqualDequantizedProduct) {
  for (TensorType t : kKTypes) {
    const QuantDot* ref = quant_dot_ref(t);
    ASSERT_NE(ref, nullptr) << tensor_type_name(t);
    for (int64_t k : {256, 1024}) {
      for (uint32_t seed = 1; seed <= 4; ++seed) {
        const auto w = seed % 2 == 0 ? quantized_row(t, k, seed) : random_raw_row(t, k, seed);
        const auto x = test::random_floats(static_cast<size_t>(k), 200 + seed, -3.0f, 3.0f);
        std::vector<float> wd(static_cast<size_t>(k)), xq(static_cast<size_t>(k));
        quant::type_traits(t).to_float_ref(w.data(), wd.data(), k);
        act_quant_round_trip(ActQuant::Q8_K, x.data(), xq.data(), k);
        double expect = 0.0;
        for (int64_t i = 0; i < k; ++i) expect += static_cast<double>(wd[i]) * xq[i];
        std::vector<uint8_t> a;
        quantize_ref(x.data(), a, k);
        const double tol = 1e-5 * (1.0 + abs_product_sum(t, w, x, k));
        EXPECT_NEAR(ref->dot(w.data(), a.data(), k), expect, tol) << tensor_type_name(t) << " seed=" << seed;
      }
    }
  }
}

// Through the threaded product: tiles and the fast quantizer in place.
TEST(QuantDotK, MatmulEqualsReferenceProduct) {
  const int64_t n = 13, k = 512;
  for (TensorType t : kKTypes) {
    const size_t rb = tensor_row_bytes(t, k);
    std::vector<uint8_t> w(static_cast<size_t>(n) * rb);
    for (int64_t r = 0; r < n; ++r) {
      const auto row = r % 2 == 0 ? quantized_row(t, k, 50 + r) : random_raw_row(t, k, 50 + r);
      std::memcpy(w.data() + r * rb, row.data(), rb);
    }
    const MatView view{t, w.data(), k, n, rb};
    for (int64_t m : {1, 6}) {
      const auto x = test::random_floats(static_cast<size_t>(m * k), 60, -2.0f, 2.0f);
      std::vector<float> y(static_cast<size_t>(m * n)), y_ref(static_cast<size_t>(m * n));
      ThreadPool pool(2);
      MatmulScratch scratch;
      matmul(view, x.data(), m, y.data(), pool, scratch);
      matmul_ref(view, x.data(), m, y_ref.data());
      for (size_t i = 0; i < y.size(); ++i) {
        EXPECT_NEAR(y[i], y_ref[i], 1e-4 * (1.0 + std::fabs(y_ref[i]))) << tensor_type_name(t) << " m=" << m;
      }
    }
  }
}

TEST(QuantDotK, DotsMatchReference) {
  if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this machine";
  for (TensorType t : kKTypes) {
    const QuantDot* ref = quant_dot_ref(t);
    const QuantDot* fast = quant_dot_avx512(t);
    ASSERT_NE(ref, nullptr) << tensor_type_name(t);
    ASSERT_NE(fast, nullptr) << tensor_type_name(t);
    for (int64_t k : {256, 768, 4096}) {
      for (uint32_t seed = 1; seed <= 6; ++seed) {
        const auto w = seed % 2 == 0 ? quantized_row(t, k, seed) : random_raw_row(t, k, seed);
        const auto x = test::random_floats(static_cast<size_t>(k), 100 + seed, -4.0f, 4.0f);
        std::vector<uint8_t> a;
        quantize_ref(x.data(), a, k);
        const float r = ref->dot(w.data(), a.data(), k);
        const float f = fast->dot(w.data(), a.data(), k);
        const double tol = 1e-5 * (1.0 + abs_product_sum(t, w, x, k));
        EXPECT_NEAR(f, r, tol) << tensor_type_name(t) << " k=" << k << " seed=" << seed;
      }
    }
  }
}

TEST(QuantDotK, TilesEqualDotsEveryShape) {
  if (!have_avx512()) GTEST_SKIP() << "no AVX-512 on this machine";
  const int64_t k = 512;
  const int64_t kMax = 4;
  for (TensorType t : kKTypes) {
    const QuantDot* q = quant_dot_avx512(t);
    ASSERT_NE(q, nullptr) << tensor_type_name(t);
    ASSERT_NE(q->tile, nullptr) << tensor_type_name(t);
    const size_t wrb = tensor_row_bytes(t, k), arb = q->act_row_bytes(k);
    std::vector<uint8_t> w(kMax * wrb), a(kMax * arb);
    for (int64_t r = 0; r < kMax; ++r) {
      const auto row = r % 2 == 0 ? random_raw_row(t, k, 30 + r) : quantized_row(t, k, 30 + r);
      std::memcpy(w.data() + r * wrb, row.data(), wrb);
      const auto x = test::random_floats(k, 40 + r, -5.0f, 5.0f);
      q->quantize(x.data(), a.data() + r * arb, k);
    }
    const int64_t ys = kMax + 1;  // a stride other than nr
    for (int64_t nr = 1; nr <= kMax; ++nr) {
      for (int64_t nt = 1; nt <= kMax; ++nt) {
        std::vector<float> y(static_cast<size_t>(kMax * ys), -1.0f);
        q->tile(w.data(), wrb, nr, a.data(), arb, nt, k, y.data(), ys);
        for (int64_t tt = 0; tt < kMax; ++tt) {
          for (int64_t r = 0; r < ys; ++r) {
            const float got = y[tt * ys + r];
            if (tt < nt && r < nr) {
              EXPECT_EQ(got, q->dot(w.data() + r * wrb, a.data() + tt * arb, k))
                  << tensor_type_name(t) << " " << nr << "x" << nt << " r=" << r << " t=" << tt;
            } else {
              EXPECT_EQ(got, -1.0f) << tensor_type_name(t) << " wrote outside the tile";
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu
