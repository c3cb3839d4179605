// The packed products' fast kernels at their integer limits: any byte
// pattern is a valid packed group (the layouts re-encode every plain bit), so
// groups of raw random bytes — and of all-ones bytes, the largest K-quant
// values and scales, Q8_0's -128 — are multiplied with activations pinned at
// +-127 (the quantizers' range; the AVX2 kernels' sign trick needs |a| <= 127),
// where an int16 partial sum in a kernel would overflow first. Each must equal the layout's reference bit
// for bit, for every token count of a call (1..kPackTokens: the kernels'
// register tiles and their remainders) and at every level of this host.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.h"
#include "cpu/features.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "cpu/packed/packed_matmul.h"
#include "gguf/tensor_type.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kGroups = 2;
constexpr int64_t kTokens = kPackTokens + 5;

// Bytes of one packed row, per type, for k = n_super * 256.
int64_t row_bytes(TensorType t, int64_t k) {
  switch (t) {
    case TensorType::Q4_0:
      return k / 32 * 18;
    case TensorType::Q8_0:
      return k / 32 * 34;
    case TensorType::Q4_K:
      return k / 256 * 144;
    case TensorType::Q5_K:
      return k / 256 * 176;
    case TensorType::Q6_K:
      return k / 256 * 210;
    case TensorType::IQ2_XXS:
      return k / 256 * 66;
    default:
      return k / 256 * 136;  // IQ4_XS
  }
}

bool k_type(TensorType t) { return t != TensorType::Q4_0 && t != TensorType::Q8_0; }

// Offsets of the f16 scales inside one group block (they must stay finite).
std::vector<int64_t> f16_offsets(TensorType t) {
  std::vector<int64_t> out;
  for (int64_t r = 0; r < kPackRows; ++r) {
    out.push_back(2 * r);
    if (t == TensorType::Q4_K || t == TensorType::Q5_K) out.push_back(kPackedQ4KDminOffset + 2 * r);
  }
  return out;
}

int64_t group_block_bytes(TensorType t) { return row_bytes(t, k_type(t) ? 256 : 32) * kPackRows; }

// Weights: `fill` < 0 draws random bytes, else every byte is `fill`; the f16
// scales are random finite values in [-1, 1] either way.
std::vector<uint8_t> make_groups(TensorType t, int64_t k, int fill, std::mt19937& rng) {
  std::vector<uint8_t> w(static_cast<size_t>(kGroups * kPackRows * row_bytes(t, k)));
  for (auto& b : w) b = fill < 0 ? static_cast<uint8_t>(rng()) : static_cast<uint8_t>(fill);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const int64_t gbb = group_block_bytes(t);
  for (int64_t at = 0; at + gbb <= static_cast<int64_t>(w.size()); at += gbb) {
    for (int64_t off : f16_offsets(t)) {
      const uint16_t h = fp32_to_fp16(unit(rng));
      std::memcpy(&w[static_cast<size_t>(at + off)], &h, 2);
    }
  }
  return w;
}

struct Acts {
  std::vector<uint8_t> q8;
  std::vector<float> d;
  std::vector<int32_t> sum;
  PackedActs view;
};

// Activations of kTokens tokens: values drawn from {lo, hi} only (the
// extremes), or uniform in [lo, hi] when `mixed`.
Acts make_acts(TensorType t, int64_t k, int lo, int hi, bool mixed, std::mt19937& rng) {
  Acts a;
  std::uniform_int_distribution<int> any(lo, hi);
  std::bernoulli_distribution coin(0.5);
  const auto draw = [&] { return static_cast<int8_t>(mixed ? any(rng) : (coin(rng) ? hi : lo)); };
  if (k_type(t)) {
    const int64_t nb = k / quant::kQKK;
    a.view.row_bytes = static_cast<size_t>(nb) * sizeof(quant::BlockQ8_K);
    a.q8.resize(a.view.row_bytes * kTokens);
    for (int64_t i = 0; i < kTokens * nb; ++i) {
      quant::BlockQ8_K blk{};
      blk.d = 0.01f + 0.001f * static_cast<float>(i);
      for (auto& q : blk.qs) q = draw();
      for (int j = 0; j < quant::kQKK / 16; ++j) {
        int s = 0;
        for (int l = 0; l < 16; ++l) s += blk.qs[16 * j + l];
        blk.bsums[j] = static_cast<int16_t>(s);
      }
      std::memcpy(a.q8.data() + i * sizeof(blk), &blk, sizeof(blk));
    }
    a.view.n_blocks = nb;
  } else {
    const int64_t nb = k / quant::kQK;
    a.view.row_bytes = static_cast<size_t>(nb) * sizeof(quant::BlockQ8_0);
    a.q8.resize(a.view.row_bytes * kTokens);
    a.d.resize(static_cast<size_t>(kTokens * nb));
    a.sum.resize(a.d.size());
    for (int64_t i = 0; i < kTokens * nb; ++i) {
      quant::BlockQ8_0 blk{};
      blk.d = fp32_to_fp16(0.02f + 0.001f * static_cast<float>(i % 7));
      int s = 0;
      for (auto& q : blk.qs) s += (q = draw());
      std::memcpy(a.q8.data() + i * sizeof(blk), &blk, sizeof(blk));
      a.d[static_cast<size_t>(i)] = fp16_to_fp32(blk.d);
      a.sum[static_cast<size_t>(i)] = s;
    }
    a.view.n_blocks = nb;
  }
  a.view.q8 = a.q8.data();
  a.view.d = a.d.data();
  a.view.sum = a.sum.data();
  return a;
}

std::vector<Isa> fast_levels() {
  std::vector<Isa> out;
  const Isa top = detected_isa();
  if (top == Isa::Avx2 || top == Isa::Avx512) out.push_back(Isa::Avx2);
  if (top == Isa::Avx512) out.push_back(Isa::Avx512);
  if (top == Isa::Neon) out.push_back(Isa::Neon);
  return out;
}

class PackedExtremes : public ::testing::TestWithParam<TensorType> {};

TEST_P(PackedExtremes, FastKernelsEqualReferenceAtTheIntegerLimits) {
  const TensorType type = GetParam();
  const PackedKernel ref = packed_kernel_ref(type);
  ASSERT_NE(ref, nullptr);
  std::mt19937 rng(std::random_device{}());
  const uint32_t seed = rng();
  rng.seed(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Two super-blocks (Q4_0/Q8_0: 16 blocks) plus one: odd block counts too.
  const int64_t k = 3 * 256;
  const int64_t n = kGroups * kPackRows;
  const int lo = -127;
  int checked = 0;
  for (int fill : {-1, 0xFF, 0x00, 0x80, 0x7F}) {
    const std::vector<uint8_t> w = make_groups(type, k, fill, rng);
    for (bool mixed : {false, true}) {
      const Acts a = make_acts(type, k, lo, 127, mixed, rng);
      for (Isa isa : fast_levels()) {
        const PackedKernel fast = find_packed_kernel(type, isa);
        if (fast == nullptr) continue;
        for (int64_t nt = 1; nt <= kPackTokens; ++nt) {
          const int64_t t0 = kTokens - nt;
          std::vector<float> y(static_cast<size_t>(nt * n), -1.0f), want(y.size(), -2.0f);
          for (int64_t g = 0; g < kGroups; ++g) {
            const uint8_t* group = w.data() + g * kPackRows * row_bytes(type, k);
            fast(group, a.view, t0, nt, y.data() + g * kPackRows, n);
            ref(group, a.view, t0, nt, want.data() + g * kPackRows, n);
          }
          ASSERT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0)
              << tensor_type_name(type) << " " << isa_name(isa) << " fill=" << fill << " mixed=" << mixed
              << " nt=" << nt;
          ++checked;
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no fast packed kernel for " << tensor_type_name(type) << " on this CPU";
}

INSTANTIATE_TEST_SUITE_P(Types, PackedExtremes,
                         ::testing::Values(TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K,
                                           TensorType::Q6_K, TensorType::IQ4_XS, TensorType::IQ2_XXS),
                         [](const auto& info) { return std::string(tensor_type_name(info.param)); });

}  // namespace
}  // namespace ferrite::cpu
