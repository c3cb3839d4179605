// Products of the IQ, TQ, legacy Q4_1/Q5_0/Q5_1/IQ4_NL and MXFP4 weights
// (quant_dot_iq.h) on fresh random inputs (the seed is printed with every
// failure): the reference dots against the definition (dequantized weights
// times the activations' 8-bit round trip, in double); at every level the
// host supports, the level's dot and tiles of every shape against the
// reference bit for bit (integer sums exact, float steps the same), on rows
// from the quantizer, raw random bytes (every grid index, sign and scale)
// and all-ones / all-zeros bytes against activations at +-127; the Q8_1
// quantizer against the round trip; matmul() at each level against the
// scalar level bit for bit and against matmul_ref.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/dot/act_quant.h"
#include "cpu/features.h"
#include "cpu/matmul.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/dot/quant_dot_iq.h"
#include "cpu/thread_pool.h"
#include "gguf/tensor_type.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/type_traits.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

const TensorType kTypes[] = {TensorType::IQ1_S,  TensorType::IQ1_M, TensorType::IQ2_XXS, TensorType::IQ2_XS,
                             TensorType::IQ2_S,  TensorType::IQ3_XXS, TensorType::IQ3_S, TensorType::IQ4_XS,
                             TensorType::TQ1_0,  TensorType::TQ2_0, TensorType::Q4_1,    TensorType::Q5_0,
                             TensorType::Q5_1,   TensorType::IQ4_NL, TensorType::MXFP4};

std::string name(TensorType t) { return tensor_type_name(t); }

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// A fresh seed, printed with every failure of the enclosing scope.
uint32_t fresh_seed() { return std::random_device{}(); }

// The levels of this host's family, up to what it supports.
std::vector<Isa> levels() {
  const Isa saved = active_isa();
  std::vector<Isa> out = {Isa::Scalar};
  for (Isa isa : {Isa::Neon, Isa::Avx2, Isa::Avx512}) {
    if (set_isa(isa) == isa) out.push_back(isa);
  }
  set_isa(saved);
  return out;
}

// The levels whose products of `t` are not the reference's own (the ones
// with something to compare; under qemu the others would only cost time).
std::vector<Isa> fast_levels(TensorType t) {
  std::vector<Isa> out;
  for (Isa isa : levels()) {
    if (find_quant_dot(t, isa) != quant_dot_ref(t)) out.push_back(isa);
  }
  return out;
}

int64_t block_len(TensorType t) { return tensor_type_info(t)->block_size; }
size_t block_bytes(TensorType t) { return tensor_type_info(t)->block_bytes; }

// Overwrites block b's f16 scales (d, and m for Q4_1/Q5_1) with finite ones.
void set_scales(TensorType t, uint8_t* row, int64_t b, uint16_t d, uint16_t m) {
  uint8_t* p = row + b * block_bytes(t);
  switch (t) {
    case TensorType::TQ1_0:
    case TensorType::TQ2_0:  // d last
      std::memcpy(p + block_bytes(t) - 2, &d, 2);
      break;
    case TensorType::IQ1_M: {  // d in the top nibbles of the four scale words
      auto* q = reinterpret_cast<quant::BlockIQ1_M*>(p);
      uint16_t sc[4];
      std::memcpy(sc, q->scales, sizeof sc);
      for (int i = 0; i < 4; ++i) sc[i] = static_cast<uint16_t>((sc[i] & 0x0FFF) | (((d >> (4 * i)) & 0xF) << 12));
      std::memcpy(q->scales, sc, sizeof sc);
      break;
    }
    case TensorType::MXFP4:  // the E8M0 byte from d's bits: mostly 2^-32..2^31, at times the subnormal 0..3
      p[0] = ((d >> 8) & 7) == 0 ? static_cast<uint8_t>(d & 3) : static_cast<uint8_t>(96 + (d & 63));
      break;
    case TensorType::Q4_1:
    case TensorType::Q5_1:
      std::memcpy(p, &d, 2);
      std::memcpy(p + 2, &m, 2);
      break;
    default:  // d first
      std::memcpy(p, &d, 2);
      break;
  }
}

std::vector<uint8_t> random_bytes_row(TensorType t, int64_t k, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  std::vector<uint8_t> w(tensor_row_bytes(t, k));
  for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
  for (int64_t b = 0; b < k / block_len(t); ++b) set_scales(t, w.data(), b, fp32_to_fp16(scale(rng)), fp32_to_fp16(scale(rng)));
  return w;
}

std::vector<uint8_t> quantized_row(TensorType t, int64_t k, std::mt19937& rng) {
  const auto wf = test::random_floats(static_cast<size_t>(k), rng(), -3.0f, 3.0f);
  const std::vector<float> importance(static_cast<size_t>(k), 1.0f);
  std::vector<uint8_t> w(tensor_row_bytes(t, k));
  quant::type_traits(t).from_float(wf.data(), w.data(), k, importance.data());
  return w;
}

std::vector<uint8_t> fill_row(TensorType t, int64_t k, uint8_t fill) {
  std::vector<uint8_t> w(tensor_row_bytes(t, k), fill);
  for (int64_t b = 0; b < k / block_len(t); ++b) set_scales(t, w.data(), b, fp32_to_fp16(0.75f), fp32_to_fp16(-0.5f));
  return w;
}

std::vector<uint8_t> quantized_act(TensorType t, const std::vector<float>& x) {
  const QuantDot* ref = quant_dot_ref(t);
  const auto k = static_cast<int64_t>(x.size());
  std::vector<uint8_t> a(ref->act_row_bytes(k));
  ref->quantize(x.data(), a.data(), k);
  return a;
}

// Activations whose every 8-bit value is v (block scales 0.01, sums to match).
std::vector<uint8_t> constant_act(TensorType t, int64_t k, int8_t v) {
  const QuantDot* ref = quant_dot_ref(t);
  std::vector<uint8_t> a(ref->act_row_bytes(k));
  const uint16_t d16 = fp32_to_fp16(0.01f);
  switch (ref->act) {
    case ActQuant::Q8_K:
      for (auto& b : std::span(reinterpret_cast<quant::BlockQ8_K*>(a.data()), static_cast<size_t>(k / 256))) {
        b.d = 0.01f;
        for (auto& q : b.qs) q = v;
        for (auto& s : b.bsums) s = static_cast<int16_t>(16 * v);
      }
      break;
    case ActQuant::Q8_1:
      for (auto& b : std::span(reinterpret_cast<quant::BlockQ8_1*>(a.data()), static_cast<size_t>(k / 32))) {
        b.d = d16;
        b.s = fp32_to_fp16(0.01f * 32 * v);
        for (auto& q : b.qs) q = v;
      }
      break;
    default:
      for (auto& b : std::span(reinterpret_cast<quant::BlockQ8_0*>(a.data()), static_cast<size_t>(k / 32))) {
        b.d = d16;
        for (auto& q : b.qs) q = v;
      }
      break;
  }
  return a;
}

// Row lengths: one block, several, and for the 32-value types a tail past
// the four-block steps.
std::vector<int64_t> lengths(TensorType t) {
  if (block_len(t) == 32) return {32, 96, 160, 1056};
  return {256, 768, 2304};
}

// The dot of `isa`'s table equals the reference's bit for bit.
void expect_same(TensorType t, Isa isa, const std::vector<uint8_t>& w, const std::vector<uint8_t>& a, int64_t k,
                 const char* what) {
  const float r = quant_dot_ref(t)->dot(w.data(), a.data(), k);
  const float f = find_quant_dot(t, isa)->dot(w.data(), a.data(), k);
  EXPECT_EQ(bits(f), bits(r)) << name(t) << " " << isa_name(isa) << " k=" << k << " " << what << ": " << f << " vs "
                              << r;
}

TEST(QuantDotIq, EveryTypeHasAProductAtEveryLevel) {
  for (TensorType t : kTypes) {
    const QuantDot* ref = quant_dot_ref(t);
    ASSERT_NE(ref, nullptr) << name(t);
    EXPECT_EQ(ref->act, act_quant_for(t)) << name(t);
    for (Isa isa : levels()) {
      const QuantDot* q = find_quant_dot(t, isa);
      ASSERT_NE(q, nullptr) << name(t) << " " << isa_name(isa);
      EXPECT_EQ(q->act, ref->act) << name(t);
      if (isa >= Isa::Avx2) {
        EXPECT_NE(q->tile, nullptr) << name(t) << " " << isa_name(isa);
      }
    }
  }
}

// The reference against the definition; Q4_1/Q5_1 through matmul_ref, which
// adds the weights' offset term with the Q8_1 block sums.
TEST(QuantDotIq, ReferenceEqualsDequantizedProduct) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (TensorType t : kTypes) {
    const int64_t k = lengths(t)[1];
    for (int i = 0; i < 4; ++i) {
      const auto w = i % 2 == 0 ? quantized_row(t, k, rng) : random_bytes_row(t, k, rng);
      const auto x = test::random_floats(static_cast<size_t>(k), rng(), -3.0f, 3.0f);
      float want = 0.0f;
      matmul_ref(MatView{t, w.data(), k, 1, w.size()}, x.data(), 1, &want);
      std::vector<float> wd(static_cast<size_t>(k)), xq(static_cast<size_t>(k));
      quant::type_traits(t).to_float_ref(w.data(), wd.data(), k);
      act_quant_round_trip(act_quant_for(t), x.data(), xq.data(), k);
      double magnitude = 0.0;
      for (int64_t j = 0; j < k; ++j) magnitude += std::fabs(static_cast<double>(wd[j]) * xq[j]);
      const float got = quant_dot_ref(t)->dot(w.data(), quantized_act(t, x).data(), k);
      EXPECT_NEAR(got, want, 1e-5 * (1.0 + magnitude)) << name(t) << " row " << i;
    }
  }
}

TEST(QuantDotIq, EveryLevelEqualsReferenceBitForBit) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> log_range(-6.0f, 6.0f);
  for (TensorType t : kTypes) {
    const std::vector<Isa> isas = fast_levels(t);
    if (isas.empty()) continue;
    for (int64_t k : lengths(t)) {
      for (int i = 0; i < 2; ++i) {
        const float range = std::exp2(log_range(rng));
        const auto a = quantized_act(t, test::random_floats(static_cast<size_t>(k), rng(), -range, range));
        const auto quantized = quantized_row(t, k, rng), raw = random_bytes_row(t, k, rng);
        for (Isa isa : isas) {
          expect_same(t, isa, quantized, a, k, "quantized");
          expect_same(t, isa, raw, a, k, "random bytes");
        }
      }
      // Every byte 0xFF or 0x00: each scale, index and sign at one end.
      for (uint8_t fill : {uint8_t{0xFF}, uint8_t{0x00}}) {
        const auto w = fill_row(t, k, fill);
        for (int8_t v : {int8_t{127}, int8_t{-127}}) {
          for (Isa isa : isas) expect_same(t, isa, w, constant_act(t, k, v), k, "edges");
        }
      }
    }
  }
}

// Tiles of every row count and of 1..4 tokens, and panels of more tokens
// (up to QuantDot::tile_tokens), equal the reference dots bit for bit.
TEST(QuantDotIq, TilesOfEveryShapeEqualReference) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  constexpr int kMaxRows = 4;
  for (TensorType t : kTypes) {
    for (Isa isa : fast_levels(t)) {
      const QuantDot* q = find_quant_dot(t, isa);
      if (q->tile == nullptr) continue;
      const int64_t k = lengths(t)[1];
      const int64_t max_tokens = q->tile_tokens;
      const int64_t ys = kMaxRows + 3;  // y row stride (one row of y per token), wider than any tile
      const size_t wrb = tensor_row_bytes(t, k), arb = q->act_row_bytes(k);
      std::vector<uint8_t> w(kMaxRows * wrb), a(max_tokens * arb);
      for (int r = 0; r < kMaxRows; ++r) {
        const auto row = r % 2 == 0 ? quantized_row(t, k, rng) : random_bytes_row(t, k, rng);
        std::memcpy(w.data() + r * wrb, row.data(), wrb);
      }
      for (int64_t tt = 0; tt < max_tokens; ++tt) {
        const auto act = quantized_act(t, test::random_floats(static_cast<size_t>(k), rng(), -3.0f, 3.0f));
        std::memcpy(a.data() + tt * arb, act.data(), arb);
      }
      std::vector<int64_t> token_counts = {1, 2, 3, 4};
      if (max_tokens > 4) token_counts.insert(token_counts.end(), {5, max_tokens / 2 + 1, max_tokens});
      for (int nr = 1; nr <= kMaxRows; ++nr) {
        for (int64_t nt : token_counts) {
          std::vector<float> y(static_cast<size_t>(max_tokens * ys), -1.0f);
          q->tile(w.data(), wrb, nr, a.data(), arb, nt, k, y.data(), ys);
          for (int64_t tt = 0; tt < nt; ++tt) {
            for (int r = 0; r < nr; ++r) {
              const float want = quant_dot_ref(t)->dot(w.data() + r * wrb, a.data() + tt * arb, k);
              EXPECT_EQ(bits(y[tt * ys + r]), bits(want))
                  << name(t) << " " << isa_name(isa) << " tile " << nr << "x" << nt << " r=" << r << " t=" << tt;
            }
          }
        }
      }
    }
  }
}

// The Q8_1 quantizer holds the round trip's values, and its sums are the
// ones act_quant_q8_1_sum_correction describes.
TEST(QuantDotIq, Q8_1QuantizerMatchesTheRoundTrip) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr int64_t k = 1024, kBlock = 32;
  auto x = test::random_floats(static_cast<size_t>(k), seed, -5.0f, 5.0f);
  for (int64_t j = 0; j < kBlock; ++j) x[static_cast<size_t>(j)] = 0.0f;  // an all-zero block
  std::vector<quant::BlockQ8_1> q(static_cast<size_t>(k / kBlock));
  quantize_q8_1_ref(x.data(), q.data(), k);
  std::vector<float> y(static_cast<size_t>(k)), corr(static_cast<size_t>(k / kBlock));
  act_quant_round_trip(ActQuant::Q8_1, x.data(), y.data(), k);
  act_quant_q8_1_sum_correction(x.data(), y.data(), corr.data(), k);
  for (int64_t b = 0; b < k / kBlock; ++b) {
    float sum_y = 0.0f;
    for (int64_t j = 0; j < kBlock; ++j) {
      const float v = fp16_to_fp32(q[b].d) * q[b].qs[j];
      EXPECT_EQ(v, y[b * kBlock + j]) << "block " << b << " value " << j;  // -0 and 0 alike
      sum_y += y[b * kBlock + j];
    }
    EXPECT_EQ(fp16_to_fp32(q[b].s), corr[b] + sum_y) << "block " << b;
  }
}

// Per output (token t, row r at t * n_rows + r): sum_j |w_rj| amax_j / 254 *
// 1.01, amax_j the largest |x| of the 256-value block holding j (the 8-bit
// activations' rounding, with room for an f16 scale).
std::vector<double> activation_rounding_bound(TensorType t, const uint8_t* w, size_t rb, int64_t n_rows, int64_t k,
                                              const std::vector<float>& x, int64_t m) {
  constexpr int64_t kAmaxBlock = 256;
  std::vector<double> amax(static_cast<size_t>(m * k));
  for (int64_t i = 0; i < m * k; i += kAmaxBlock) {
    double a = 0.0;
    for (int64_t j = i; j < std::min(i + kAmaxBlock, m * k); ++j) a = std::max(a, std::fabs(static_cast<double>(x[j])));
    std::fill(amax.begin() + i, amax.begin() + std::min(i + kAmaxBlock, m * k), a);
  }
  std::vector<float> wd(static_cast<size_t>(k));
  std::vector<double> bound(static_cast<size_t>(m * n_rows));
  for (int64_t r = 0; r < n_rows; ++r) {
    quant::dequantize_row(t, w + static_cast<size_t>(r) * rb, wd.data(), k);
    for (int64_t tok = 0; tok < m; ++tok) {
      double b = 0.0;
      for (int64_t j = 0; j < k; ++j) b += std::fabs(static_cast<double>(wd[j])) * amax[tok * k + j];
      bound[static_cast<size_t>(tok * n_rows + r)] = b / 254.0 * 1.01;
    }
  }
  return bound;
}

// matmul() at every level equals the scalar level bit for bit (one token,
// several, more than a token block), and the reference product within float rounding.
TEST(QuantDotIq, MatmulAtEveryLevelEqualsScalarAndReference) {
  const uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  constexpr int64_t kRows = 13;
  ThreadPool pool(1);  // one thread: the tiles are what is tested (and qemu hands work between threads slowly)
  const Isa saved = active_isa();
  for (TensorType t : kTypes) {
    const int64_t k = lengths(t)[1];
    const size_t rb = tensor_row_bytes(t, k);
    std::vector<uint8_t> w(rb * kRows);
    for (int64_t r = 0; r < kRows; ++r) {
      const auto row = r % 3 == 0 ? quantized_row(t, k, rng) : random_bytes_row(t, k, rng);
      std::memcpy(w.data() + r * rb, row.data(), rb);
    }
    const MatView view{t, w.data(), k, kRows, rb, nullptr};
    for (int64_t m : {int64_t{1}, int64_t{6}, int64_t{70}}) {  // dots, a panel, two token blocks
      const auto x = test::random_floats(static_cast<size_t>(m * k), rng(), -4.0f, 4.0f);
      std::vector<float> y_scalar(static_cast<size_t>(m * kRows)), y_ref(y_scalar.size()), y(y_scalar.size());
      MatmulScratch scratch;
      matmul_ref(view, x.data(), m, y_ref.data());
      set_isa(Isa::Scalar);
      matmul(view, x.data(), m, y_scalar.data(), pool, scratch);
      // The levels multiply 8-bit activations: each value within amax/254 of
      // its block (32 or 256 values; the 256-value amax bounds both), so an
      // output within sum_j |w_j| amax_j / 254 of the float product, plus
      // float rounding. (Relative to |y| alone the bound failed for outputs
      // that cancel to near 0.)
      const std::vector<double> act_bound = activation_rounding_bound(t, w.data(), rb, kRows, k, x, m);
      for (size_t i = 0; i < y.size(); ++i) {
        EXPECT_NEAR(y_scalar[i], y_ref[i], 1e-4 * (1.0 + std::fabs(y_ref[i])) + act_bound[i])
            << name(t) << " m=" << m << " out " << i;
      }
      for (Isa isa : fast_levels(t)) {
        set_isa(isa);
        matmul(view, x.data(), m, y.data(), pool, scratch);
        for (size_t i = 0; i < y.size(); ++i) {
          EXPECT_EQ(bits(y[i]), bits(y_scalar[i])) << name(t) << " " << isa_name(isa) << " m=" << m << " out " << i;
        }
      }
      set_isa(saved);
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu
