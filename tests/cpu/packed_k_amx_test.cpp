// The AMX kernel for packed Q4_K (packed_k_amx.cpp): equals the layout's
// reference kernel bit for bit on random weights and activations (also with
// every 6-bit scale/min code), and matmul() with AMX tiles of 16 tokens plus
// VNNI tails agrees with the plain reference K . Q8_K dot.
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/features.h"
#include "cpu/matmul.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "cpu/packed/packed_matmul.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/thread_pool.h"
#include "quant/blocks.h"
#include "quant/type_traits.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

constexpr TensorType kType = TensorType::Q4_K;
constexpr int64_t kRows = 48;  // three groups
constexpr int64_t kQ4KBlockBytes = 144;

struct Weights {
  std::vector<uint8_t> plain;
  std::vector<uint8_t> packed;
  MatView view;
};

// Random floats quantized to Q4_K; with random_bytes every byte but d and
// dmin random (all scale and min codes), d and dmin small finite values.
Weights make_weights(int64_t k, uint32_t seed, bool random_bytes) {
  const auto f = test::random_floats(static_cast<size_t>(kRows * k), seed);
  Weights w;
  const uint64_t rb = tensor_row_bytes(kType, static_cast<uint64_t>(k));
  w.plain.resize(rb * kRows);
  for (int64_t r = 0; r < kRows; ++r) {
    quant::type_traits(kType).from_float(f.data() + r * k, w.plain.data() + r * rb, k, nullptr);
  }
  if (random_bytes) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> scale(1e-3f, 1e-1f);
    for (size_t blk = 0; blk < w.plain.size() / kQ4KBlockBytes; ++blk) {
      uint8_t* p = w.plain.data() + blk * kQ4KBlockBytes;
      for (int64_t i = 0; i < kQ4KBlockBytes; ++i) p[i] = static_cast<uint8_t>(rng());
      const uint16_t d = fp32_to_fp16(scale(rng));
      const uint16_t dmin = fp32_to_fp16(scale(rng));
      std::memcpy(p, &d, sizeof(d));
      std::memcpy(p + sizeof(d), &dmin, sizeof(dmin));
    }
  }
  w.view = MatView{kType, w.plain.data(), k, kRows, rb};
  w.packed.resize(w.plain.size());
  pack_rows(w.view, w.packed.data());
  return w;
}

struct Acts {
  std::vector<uint8_t> q8;
  PackedActs view;
};

Acts make_acts(int64_t m, int64_t k, uint32_t seed) {
  const auto x = test::random_floats(static_cast<size_t>(m * k), seed);
  const QuantDot* qd = quant_dot_ref(kType);
  Acts a;
  const size_t rb = qd->act_row_bytes(k);
  a.q8.resize(rb * static_cast<size_t>(m));
  for (int64_t t = 0; t < m; ++t) qd->quantize(x.data() + t * k, a.q8.data() + t * rb, k);
  a.view.q8 = a.q8.data();
  a.view.row_bytes = rb;
  a.view.n_blocks = k / quant::kQKK;
  return a;
}

void expect_amx_equals_reference(int64_t k, uint32_t seed, bool random_bytes) {
  const Weights w = make_weights(k, seed, random_bytes);
  constexpr int64_t kT0 = 3;  // a token offset that is not a multiple of 16
  constexpr int64_t kNt = 2 * kAmxTokens;
  const Acts a = make_acts(kT0 + kNt, k, seed + 1);
  const PackedKernel amx = find_packed_kernel_amx(kType);
  ASSERT_NE(amx, nullptr);
  const PackedKernel ref = packed_kernel_ref(kType);
  const size_t group_bytes = static_cast<size_t>(kPackRows) * w.view.row_bytes;
  std::vector<float> got(static_cast<size_t>(kNt * kRows), -1.0f), want(got.size(), -2.0f);
  for (int64_t g = 0; g < kRows / kPackRows; ++g) {
    const uint8_t* group = w.packed.data() + g * group_bytes;
    amx(group, a.view, kT0, kNt, got.data() + g * kPackRows, kRows);
    for (int64_t t = 0; t < kNt; t += kPackTokens) {
      ref(group, a.view, kT0 + t, kPackTokens, want.data() + t * kRows + g * kPackRows, kRows);
    }
  }
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
        << "k=" << k << " t=" << i / kRows << " r=" << i % kRows << " got " << got[i] << " want " << want[i];
  }
}

bool have_amx() { return amx_available() && detected_isa() >= Isa::Avx512 && active_isa() >= Isa::Avx512; }

TEST(PackedKAmx, EqualsReferenceBitForBit) {
  if (!have_amx()) GTEST_SKIP() << "no AMX on this CPU";
  // One super-block, an odd number and an even number (the double buffer's halves).
  for (int64_t k : {int64_t{256}, int64_t{768}, int64_t{1024}}) expect_amx_equals_reference(k, 20, false);
}

TEST(PackedKAmx, EqualsReferenceOnEveryScaleCode) {
  if (!have_amx()) GTEST_SKIP() << "no AMX on this CPU";
  expect_amx_equals_reference(768, 30, true);
}

TEST(PackedKAmx, MatmulWithAmxTilesMatchesPlainReference) {
  if (!have_amx() || find_packed_kernel(kType, active_isa()) == nullptr) GTEST_SKIP() << "no AMX on this CPU";
  constexpr int64_t kK = 512;
  const Weights w = make_weights(kK, 40, false);
  MatView view = w.view;
  view.packed = w.packed.data();
  const QuantDot* qd = quant_dot_ref(kType);
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    MatmulScratch scratch;
    // AMX tiles only, AMX tiles and a VNNI tail, and over one token chunk of the loop.
    for (int64_t m : {int64_t{16}, int64_t{37}, int64_t{80}}) {
      const auto x = test::random_floats(static_cast<size_t>(m * kK), 41);
      std::vector<float> y(static_cast<size_t>(m * kRows));
      matmul(view, x.data(), m, y.data(), pool, scratch);
      std::vector<uint8_t> act(qd->act_row_bytes(kK));
      for (int64_t t = 0; t < m; ++t) {
        qd->quantize(x.data() + t * kK, act.data(), kK);
        for (int64_t r = 0; r < kRows; ++r) {
          const float want = qd->dot(w.view.row(r), act.data(), kK);
          EXPECT_NEAR(y[static_cast<size_t>(t * kRows + r)], want, 1e-4f * kK) << "m=" << m << " t=" << t;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu
