// NEON K-quant and IQ4_XS products (quant_dot_k_neon.cpp, and the SMMLA
// tiles of quant_dot_neon_i8mm.cpp), at every NEON level the CPU has: every
// dot equals the reference dot (quant_dot_ref.cpp) bit for bit, on weights
// quantized from random floats, on raw random bytes (weights and
// activations: every scale, bit pattern and 16-sum), and on blocks at the
// edges of each format (all scales and values at their maximum or minimum,
// extreme f16 scale bytes) against activations at +-127 and -128; tiles of
// every shape equal the reference dots; K-quant products through matmul()
// (one token and several) at each NEON level equal the scalar level's
// output; and the NEON Q8_K quantizer equals the reference quantizer byte
// for byte on random rows and corner cases. These run in the aarch64 cross
// build under qemu (scripts/test-neon) and skip on x86-64.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/features.h"
#include "cpu/matmul.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/thread_pool.h"
#include "gguf/tensor_type.h"
#include "quant/blocks.h"
#include "quant/type_traits.h"
#include "neon_levels.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kQKK = quant::kQKK;
constexpr int kGroup = 16;  // elements per Q8_K 16-sum
constexpr int8_t kActMax = 127;
constexpr int8_t kActMin = -128;  // a valid Q8_K byte the quantizer never writes
const TensorType kKTypes[] = {TensorType::Q4_K, TensorType::Q6_K, TensorType::Q5_K,
                               TensorType::Q3_K, TensorType::Q2_K, TensorType::IQ4_XS};
const int64_t kLengths[] = {256, 512, 4096 + 256};

using test::neon_levels;

size_t block_bytes(TensorType t) { return tensor_row_bytes(t, kQKK); }

// Sets the f16 super-block scales of block `b` (d, and dmin where the type
// has one).
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
    case TensorType::IQ4_XS:
      reinterpret_cast<quant::BlockIQ4_XS*>(p)->d = d;
      break;
    default:
      FAIL() << "not a K type";
  }
}

// Raw random bytes with finite random f16 scales.
std::vector<uint8_t> random_weight_bytes(TensorType t, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  std::vector<uint8_t> w(tensor_row_bytes(t, k));
  for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
  for (int64_t b = 0; b < k / kQKK; ++b) set_scales(t, w.data(), b, fp32_to_fp16(scale(rng)), fp32_to_fp16(scale(rng)));
  return w;
}

// A Q8_K row of raw random bytes (values -128..127 and 16-sums unrelated to
// them, which the reference takes as given) with a finite random scale.
std::vector<uint8_t> random_act_bytes(int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.1f, 0.1f);
  std::vector<uint8_t> a(static_cast<size_t>(k / kQKK) * sizeof(quant::BlockQ8_K));
  for (auto& v : a) v = static_cast<uint8_t>(byte(rng));
  auto* blocks = reinterpret_cast<quant::BlockQ8_K*>(a.data());
  for (int64_t b = 0; b < k / kQKK; ++b) blocks[b].d = scale(rng);
  return a;
}

// Every byte `fill` (so every scale, min and value at one end of its
// range), with the given f16 scale bits. For Q6_K, scales are int8: 0xFF is
// -1, so the extremes -128 and 127 are set explicitly by `q6_scale`.
std::vector<uint8_t> extreme_row(TensorType t, int64_t k, uint8_t fill, int8_t q6_scale, uint16_t d, uint16_t dmin) {
  std::vector<uint8_t> w(tensor_row_bytes(t, k), fill);
  for (int64_t b = 0; b < k / kQKK; ++b) {
    set_scales(t, w.data(), b, d, dmin);
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

// The dot of each NEON level and the reference dot of one row pair,
// compared bitwise.
void expect_same(TensorType t, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a, int64_t k,
                 const char* what) {
  const float r = quant_dot_ref(t)->dot(w.data(), a.data(), k);
  for (Isa isa : neon_levels()) {
    const float f = find_quant_dot(t, isa)->dot(w.data(), a.data(), k);
    EXPECT_EQ(bits(f), bits(r)) << isa_name(isa) << " " << tensor_type_name(t) << " k=" << k << " " << what << ": "
                                << f << " vs " << r;
  }
}

TEST(NeonQuantDotK, TableCoversTheKTypes) {
  SKIP_WITHOUT_NEON();
  for (Isa isa : neon_levels()) {
    for (TensorType t : kKTypes) {
      const QuantDot* q = find_quant_dot(t, isa);
      ASSERT_NE(q, nullptr) << tensor_type_name(t);
      EXPECT_NE(q, quant_dot_ref(t)) << tensor_type_name(t) << ": the NEON level has its own dot";
      EXPECT_EQ(q->act, ActQuant::Q8_K);
      EXPECT_EQ(q->act_row_bytes, quant_dot_ref(t)->act_row_bytes);
      EXPECT_NE(q->tile, nullptr);
      EXPECT_NE(q->quantize, quant_dot_ref(t)->quantize) << tensor_type_name(t) << ": the NEON quantizer";
      if (isa == Isa::NeonI8mm) {
        EXPECT_NE(q->tile, find_quant_dot(t, Isa::Neon)->tile) << tensor_type_name(t) << ": the SMMLA tiles";
      }
    }
  }
}

// The NEON Q8_K quantizer (the K types' table entry) and the reference
// quantizer, compared byte for byte over whole rows.
void expect_same_quantization(const std::vector<float>& x, const char* what) {
  const int64_t k = static_cast<int64_t>(x.size());
  const QuantDot* ref = quant_dot_ref(TensorType::Q4_K);
  const QuantDot* fast = find_quant_dot(TensorType::Q4_K, Isa::Neon);
  std::vector<uint8_t> a(ref->act_row_bytes(k), 0), b(ref->act_row_bytes(k), 0xAA);
  ref->quantize(x.data(), a.data(), k);
  fast->quantize(x.data(), b.data(), k);
  EXPECT_EQ(a, b) << what;
}

TEST(NeonQ8KQuantizer, EqualsReferenceOnRandomRows) {
  SKIP_WITHOUT_NEON();
  const int64_t k = 4096;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const float range = std::ldexp(1.0f, static_cast<int>(seed) - 10);  // 2^-9 .. 2^10
    expect_same_quantization(test::random_floats(k, seed, -range, range), "random row");
  }
}

// Blocks at the corners of the definition: all zeros (both signs), the
// largest magnitude twice with both signs (the first counts), exact halves
// (round half to even), integers, denormals (iscale overflows to infinity:
// zeros then give NaN products, which clamp to 127), huge values, and
// non-finite values (quiet and signalling NaN are skipped by the maximum).
TEST(NeonQ8KQuantizer, EqualsReferenceOnCornerCases) {
  SKIP_WITHOUT_NEON();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float snan = std::numeric_limits<float>::signaling_NaN();
  const float denorm = std::numeric_limits<float>::denorm_min();
  std::vector<std::vector<float>> blocks;
  blocks.emplace_back(kQKK, 0.0f);
  blocks.emplace_back(kQKK, -0.0f);
  {
    auto v = test::random_floats(kQKK, 7);
    v[40] = -2.0f;
    v[200] = 2.0f;
    blocks.push_back(v);
    v[40] = 2.0f;
    v[200] = -2.0f;
    blocks.push_back(v);
    v[41] = -2.0f;  // same lane group as the first: still the first counts
    blocks.push_back(v);
  }
  {
    std::vector<float> v(kQKK);
    for (int64_t j = 0; j < kQKK; ++j) v[j] = (static_cast<float>(j % 64) - 31.5f) / 2.0f;
    v[5] = -127.0f;
    blocks.push_back(v);
  }
  {
    std::vector<float> v(kQKK);
    for (int64_t j = 0; j < kQKK; ++j) v[j] = static_cast<float>(j - 127);
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
    v[150] = snan;
    blocks.push_back(v);
    v[50] = inf;
    blocks.push_back(v);
    v[50] = -inf;
    v[51] = inf;
    blocks.push_back(v);
  }
  blocks.emplace_back(kQKK, nan);
  blocks.emplace_back(kQKK, snan);
  for (size_t i = 0; i < blocks.size(); ++i) {
    expect_same_quantization(blocks[i], ("corner block " + std::to_string(i)).c_str());
  }
}

TEST(NeonQuantDotK, EqualsReferenceOnQuantizedRows) {
  SKIP_WITHOUT_NEON();
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

TEST(NeonQuantDotK, EqualsReferenceOnRandomBytes) {
  SKIP_WITHOUT_NEON();
  for (TensorType t : kKTypes) {
    for (int64_t k : kLengths) {
      for (uint32_t seed : {11u, 12u, 13u, 14u}) {
        const auto w = random_weight_bytes(t, k, seed);
        expect_same(t, w, quantized_act(t, k, seed + 200, 2.0f), k, "random weight bytes");
        expect_same(t, w, random_act_bytes(k, seed + 300), k, "random weight and activation bytes");
      }
    }
  }
}

TEST(NeonQuantDotK, EqualsReferenceOnEdgeValues) {
  SKIP_WITHOUT_NEON();
  constexpr float kActScale = 0.01f;
  // f16 scale bits: ordinary, largest finite (65504), smallest subnormal,
  // negative zero.
  const uint16_t kScaleBits[][2] = {{fp32_to_fp16(0.75f), fp32_to_fp16(-0.5f)},
                                    {0x7BFF, 0xFBFF},
                                    {0x0001, 0x8001},
                                    {0x8000, 0x3C00}};
  for (TensorType t : kKTypes) {
    for (int64_t k : kLengths) {
      // 0xFF: all scales, mins and values at their maximum (Q3_K: scale +31,
      // high bits set; Q6_K values 31). 0x00: all at their minimum (Q3_K:
      // scale -32 and values -4; Q6_K values -32).
      for (uint8_t fill : {uint8_t{0xFF}, uint8_t{0x00}}) {
        for (const auto& s : kScaleBits) {
          for (int8_t q6_scale : {int8_t{-128}, int8_t{127}}) {
            const auto w = extreme_row(t, k, fill, q6_scale, s[0], s[1]);
            for (int8_t v : {kActMax, static_cast<int8_t>(-kActMax), kActMin}) {
              expect_same(t, w, constant_act(k, v, kActScale), k, fill != 0 ? "all max" : "all min");
            }
            expect_same(t, w, quantized_act(t, k, 400, 1.0f), k, "edge weights, random activations");
            if (t != TensorType::Q6_K) break;  // q6_scale only matters for Q6_K
          }
        }
      }
    }
  }
}

// Tiles of every shape equal the reference dots bit for bit.
TEST(NeonQuantDotK, TilesOfEveryShapeEqualReference) {
  SKIP_WITHOUT_NEON();
  constexpr int kMax = 4;
  constexpr int64_t kK = 512;
  constexpr int64_t kStride = 7;  // y row stride, wider than any tile
  for (Isa isa : neon_levels()) {
    for (TensorType t : kKTypes) {
      const QuantDot* q = find_quant_dot(t, isa);
      ASSERT_NE(q->tile, nullptr);
      const size_t wrb = tensor_row_bytes(t, kK), arb = q->act_row_bytes(kK);
      std::vector<uint8_t> w(kMax * wrb), a(kMax * arb);
      for (int r = 0; r < kMax; ++r) {
        const auto row = random_weight_bytes(t, kK, 50 + r);
        std::memcpy(w.data() + r * wrb, row.data(), wrb);
        const auto act = r % 2 == 0 ? quantized_act(t, kK, 60 + r, 3.0f) : random_act_bytes(kK, 70 + r);
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
                  << isa_name(isa) << " " << tensor_type_name(t) << " tile " << nr << "x" << nt << " r=" << r
                  << " t=" << tt;
            }
          }
          // Outside the tile, y is untouched.
          for (int tt = 0; tt < kMax; ++tt) {
            for (int r = 0; r < kStride; ++r) {
              if (tt >= nt || r >= nr) {
                EXPECT_EQ(y[tt * kStride + r], -1.0f) << "tile " << nr << "x" << nt;
              }
            }
          }
        }
      }
    }
  }
}

// A K-quant GEMV through matmul() at each NEON level equals the scalar
// level's (which uses the reference dots) bit for bit.
TEST(NeonQuantDotK, MatmulAtNeonEqualsScalarLevel) {
  SKIP_WITHOUT_NEON();
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
    for (int64_t m : {int64_t{1}, int64_t{6}}) {
      const auto x = test::random_floats(static_cast<size_t>(m * kK), 22, -4.0f, 4.0f);
      std::vector<float> y_scalar(static_cast<size_t>(m * kRows)), y_neon(y_scalar.size());
      MatmulScratch scratch;
      set_isa(Isa::Scalar);
      matmul(view, x.data(), m, y_scalar.data(), pool, scratch);
      for (Isa isa : neon_levels()) {
        ASSERT_EQ(set_isa(isa), isa);
        matmul(view, x.data(), m, y_neon.data(), pool, scratch);
        set_isa(saved);
        for (size_t i = 0; i < y_scalar.size(); ++i) {
          EXPECT_EQ(bits(y_neon[i]), bits(y_scalar[i]))
              << isa_name(isa) << " " << tensor_type_name(t) << " m=" << m << " output " << i;
        }
      }
    }
  }
  set_isa(saved);
}

}  // namespace
}  // namespace ferrite::cpu
