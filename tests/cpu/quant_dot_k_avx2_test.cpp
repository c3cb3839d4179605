// AVX2 K-quant products (quant_dot_k_avx2.cpp): every dot equals the
// reference dot (quant_dot_ref.cpp) bit for bit, on weights quantized from
// random floats, on raw random bytes (every scale and bit pattern), and on
// blocks at the edges of each format (all scales and values at their
// maximum or minimum) against activations at +-127; tiles of every shape
// equal the reference dots; and K-quant products through matmul() (one
// token and several) at the AVX2 level equal the scalar level's output.
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/features.h"
#include "cpu/matmul.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/dot/quant_dot_k.h"
#include "cpu/thread_pool.h"
#include "gguf/tensor_type.h"
#include "quant/blocks.h"
#include "quant/type_traits.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kQKK = quant::kQKK;
constexpr int kGroup = 16;  // elements per Q8_K 16-sum
constexpr int8_t kActMax = 127;
const TensorType kKTypes[] = {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q5_K, TensorType::Q3_K,
                               TensorType::Q2_K};
const int64_t kLengths[] = {256, 512, 4096 + 256};

bool have_avx2() { return cpu_features().avx2 && cpu_features().fma && cpu_features().f16c; }

size_t block_bytes(TensorType t) { return tensor_row_bytes(t, kQKK); }

// Sets the f16 super-block scales of block `b` (d, and dmin where the type
// has one) to d and dmin.
void set_scales(TensorType t, uint8_t* row, int64_t b, uint16_t d, uint16_t dmin) {
  uint8_t* p = row + b * block_bytes(t);
  switch (t) {
    case TensorType::Q2_K: {
      auto* q = reinterpret_cast<quant::BlockQ2_K*>(p);
      q->d = d;
      q->dmin = dmin;
      break;
    }
    case TensorType::Q3_K:
      reinterpret_cast<quant::BlockQ3_K*>(p)->d = d;
      break;
    case TensorType::Q4_K: {
      auto* q = reinterpret_cast<quant::BlockQ4_K*>(p);
      q->d = d;
      q->dmin = dmin;
      break;
    }
    case TensorType::Q5_K: {
      auto* q = reinterpret_cast<quant::BlockQ5_K*>(p);
      q->d = d;
      q->dmin = dmin;
      break;
    }
    case TensorType::Q6_K:
      reinterpret_cast<quant::BlockQ6_K*>(p)->d = d;
      break;
    default:
      FAIL() << "not a K type";
  }
}

// Raw random bytes with finite random f16 scales.
std::vector<uint8_t> random_block_bytes(TensorType t, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  std::vector<uint8_t> w(tensor_row_bytes(t, k));
  for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
  for (int64_t b = 0; b < k / kQKK; ++b) set_scales(t, w.data(), b, fp32_to_fp16(scale(rng)), fp32_to_fp16(scale(rng)));
  return w;
}

// Every byte `fill` (so every scale, min and value at one end of its
// range), with the given f16 scales. For Q6_K, scales are int8: 0xFF is -1,
// so the extremes -128 and 127 are set explicitly by `q6_scale`.
std::vector<uint8_t> extreme_row(TensorType t, int64_t k, uint8_t fill, int8_t q6_scale) {
  std::vector<uint8_t> w(tensor_row_bytes(t, k), fill);
  for (int64_t b = 0; b < k / kQKK; ++b) {
    set_scales(t, w.data(), b, fp32_to_fp16(0.75f), fp32_to_fp16(-0.5f));
    if (t == TensorType::Q6_K) {
      auto* q = reinterpret_cast<quant::BlockQ6_K*>(w.data() + b * block_bytes(t));
      for (auto& s : q->scales) s = q6_scale;
    }
  }
  return w;
}

// A Q8_K activation row with every value `v` (16-sums by definition).
std::vector<uint8_t> constant_act(int64_t k, int8_t v, float d) {
  std::vector<uint8_t> a(static_cast<size_t>(k / kQKK) * sizeof(quant::BlockQ8_K));
  auto* blocks = reinterpret_cast<quant::BlockQ8_K*>(a.data());
  for (int64_t b = 0; b < k / kQKK; ++b) {
    blocks[b].d = d;
    for (auto& q : blocks[b].qs) q = v;
    for (auto& s : blocks[b].bsums) s = static_cast<int16_t>(kGroup * v);
  }
  return a;
}

std::vector<uint8_t> quantized_act(TensorType t, int64_t k, uint32_t seed, float range) {
  const QuantDot* ref = quant_dot_ref(t);
  const auto x = test::random_floats(static_cast<size_t>(k), seed, -range, range);
  std::vector<uint8_t> a(ref->act_row_bytes(k));
  ref->quantize(x.data(), a.data(), k);
  return a;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The AVX2 dot and the reference dot of one row pair, compared bitwise.
void expect_same(TensorType t, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a, int64_t k,
                 const char* what) {
  const float r = quant_dot_ref(t)->dot(w.data(), a.data(), k);
  const float f = quant_dot_k_avx2(t)->dot(w.data(), a.data(), k);
  EXPECT_EQ(bits(f), bits(r)) << tensor_type_name(t) << " k=" << k << " " << what << ": " << f << " vs " << r;
}

TEST(QuantDotKAvx2, TableCoversTheKTypes) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2/FMA/F16C on this machine";
  for (TensorType t : kKTypes) {
    const QuantDot* q = quant_dot_k_avx2(t);
    ASSERT_NE(q, nullptr) << tensor_type_name(t);
    EXPECT_EQ(find_quant_dot(t, Isa::Avx2), q) << tensor_type_name(t);
    EXPECT_EQ(quant_dot_avx2(t), q) << tensor_type_name(t);
    EXPECT_EQ(q->act, ActQuant::Q8_K);
    EXPECT_EQ(q->quantize, quantize_q8_k_avx2);  // bit-identical to the reference's (IsaParity)
  }
  EXPECT_EQ(quant_dot_k_avx2(TensorType::Q4_0), nullptr);
  EXPECT_EQ(quant_dot_k_avx2(TensorType::F32), nullptr);
}

TEST(QuantDotKAvx2, Avx2EqualsReferenceOnQuantizedRows) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2/FMA/F16C on this machine";
  for (TensorType t : kKTypes) {
    for (int64_t k : kLengths) {
      for (uint32_t seed : {1u, 2u, 3u}) {
        const auto wf = test::random_floats(static_cast<size_t>(k), seed, -3.0f, 3.0f);
        std::vector<uint8_t> w(tensor_row_bytes(t, k));
        quant::type_traits(t).from_float(wf.data(), w.data(), k, nullptr);
        expect_same(t, w, quantized_act(t, k, seed + 100, 8.0f), k, "quantized");
      }
    }
  }
}

TEST(QuantDotKAvx2, Avx2EqualsReferenceOnRandomBytes) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2/FMA/F16C on this machine";
  for (TensorType t : kKTypes) {
    for (int64_t k : kLengths) {
      for (uint32_t seed : {11u, 12u, 13u, 14u}) {
        const auto w = random_block_bytes(t, k, seed);
        expect_same(t, w, quantized_act(t, k, seed + 200, 2.0f), k, "random bytes");
      }
    }
  }
}

TEST(QuantDotKAvx2, Avx2EqualsReferenceOnEdgeValues) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2/FMA/F16C on this machine";
  constexpr float kActScale = 0.01f;
  for (TensorType t : kKTypes) {
    for (int64_t k : kLengths) {
      // 0xFF: all scales, mins and values at their maximum (Q3_K: scale +31,
      // high bits set; Q6_K values 63). 0x00: all at their minimum (Q3_K:
      // scale -32 and values -4; Q6_K values -32).
      for (uint8_t fill : {uint8_t{0xFF}, uint8_t{0x00}}) {
        for (int8_t q6_scale : {int8_t{-128}, int8_t{127}}) {
          const auto w = extreme_row(t, k, fill, q6_scale);
          for (int8_t v : {kActMax, static_cast<int8_t>(-kActMax)}) {
            expect_same(t, w, constant_act(k, v, kActScale), k, fill != 0 ? "all max" : "all min");
          }
          expect_same(t, w, quantized_act(t, k, 300, 1.0f), k, "edge weights, random activations");
          if (t != TensorType::Q6_K) break;  // q6_scale only matters for Q6_K
        }
      }
    }
  }
}

// Tiles of every shape equal the reference dots bit for bit.
TEST(QuantDotKAvx2, TilesOfEveryShapeEqualReference) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2/FMA/F16C on this machine";
  constexpr int kMax = 4;
  constexpr int64_t kK = 512;
  constexpr int64_t kStride = 7;  // y row stride, wider than any tile
  for (TensorType t : kKTypes) {
    const QuantDot* q = quant_dot_k_avx2(t);
    ASSERT_NE(q->tile, nullptr);
    const size_t wrb = tensor_row_bytes(t, kK), arb = q->act_row_bytes(kK);
    std::vector<uint8_t> w(kMax * wrb), a(kMax * arb);
    for (int r = 0; r < kMax; ++r) {
      const auto row = random_block_bytes(t, kK, 50 + r);
      std::memcpy(w.data() + r * wrb, row.data(), wrb);
      const auto act = quantized_act(t, kK, 60 + r, 3.0f);
      std::memcpy(a.data() + r * arb, act.data(), arb);
    }
    for (int nr = 1; nr <= kMax; ++nr) {
      for (int nt = 1; nt <= kMax; ++nt) {
        std::vector<float> y(kMax * kStride, -1.0f);
        q->tile(w.data(), wrb, nr, a.data(), arb, nt, kK, y.data(), kStride);
        for (int tt = 0; tt < nt; ++tt) {
          for (int r = 0; r < nr; ++r) {
            const float want = quant_dot_ref(t)->dot(w.data() + r * wrb, a.data() + tt * arb, kK);
            EXPECT_EQ(bits(y[tt * kStride + r]), bits(want))
                << tensor_type_name(t) << " tile " << nr << "x" << nt << " r=" << r << " t=" << tt;
          }
        }
      }
    }
  }
}

// A K-quant GEMV through matmul() at the AVX2 level equals the scalar
// level's (which uses the reference dots) bit for bit.
TEST(QuantDotKAvx2, MatmulAtAvx2EqualsScalarLevel) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2/FMA/F16C on this machine";
  constexpr int64_t kRows = 37, kK = 512;
  const Isa saved = active_isa();
  ThreadPool pool(2);
  for (TensorType t : kKTypes) {
    const auto wf = test::random_floats(static_cast<size_t>(kRows * kK), 21, -2.0f, 2.0f);
    const size_t rb = tensor_row_bytes(t, kK);
    std::vector<uint8_t> w(rb * kRows);
    for (int64_t r = 0; r < kRows; ++r) {
      quant::type_traits(t).from_float(wf.data() + r * kK, w.data() + r * rb, kK, nullptr);
    }
    const MatView view{t, w.data(), kK, kRows, rb, nullptr};
    for (int64_t m : {int64_t{1}, int64_t{6}}) {  // one token (dots) and several (tiles)
      const auto x = test::random_floats(static_cast<size_t>(m * kK), 22, -4.0f, 4.0f);
      std::vector<float> y_scalar(static_cast<size_t>(m * kRows)), y_avx2(y_scalar.size());
      MatmulScratch scratch;
      set_isa(Isa::Scalar);
      matmul(view, x.data(), m, y_scalar.data(), pool, scratch);
      ASSERT_EQ(set_isa(Isa::Avx2), Isa::Avx2);
      matmul(view, x.data(), m, y_avx2.data(), pool, scratch);
      set_isa(saved);
      for (size_t i = 0; i < y_scalar.size(); ++i) {
        EXPECT_EQ(bits(y_avx2[i]), bits(y_scalar[i])) << tensor_type_name(t) << " m=" << m << " output " << i;
      }
    }
  }
  set_isa(saved);
}

}  // namespace
}  // namespace ferrite::cpu
