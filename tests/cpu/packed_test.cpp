// Repacked weights (cpu/packed/packed.h): the layout round-trips byte for byte, the
// reference kernel of the layout equals the plain reference product, the
// AVX-512 kernel equals the layout's reference bit for bit, and matmul() on a
// packed view equals the plain reference for every token count and thread count.
#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/features.h"
#include "cpu/matmul.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_float.h"
#include "cpu/packed/packed_legacy.h"
#include "cpu/packed/packed_matmul.h"
#include "cpu/dot/quant_dot.h"
#include "quant/blocks.h"
#include "quant/type_traits.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

struct Plain {
  std::vector<uint8_t> bytes;
  MatView view;
};

Plain make(TensorType type, int64_t n, int64_t k, uint32_t seed) {
  const auto f = test::random_floats(static_cast<size_t>(n * k), seed);
  Plain p;
  const uint64_t rb = tensor_row_bytes(type, static_cast<uint64_t>(k));
  p.bytes.resize(rb * static_cast<uint64_t>(n));
  for (int64_t r = 0; r < n; ++r) quant::type_traits(type).from_float(f.data() + r * k, p.bytes.data() + r * rb, k, nullptr);
  p.view = MatView{type, p.bytes.data(), k, n, rb};
  return p;
}

// Activations quantized to Q8_0 by the reference quantizer, with block scales and sums.
struct Acts {
  std::vector<uint8_t> q8;
  std::vector<float> d;
  std::vector<int32_t> sum;
  PackedActs view;
};

Acts make_acts(TensorType type, int64_t m, int64_t k, uint32_t seed) {
  const auto x = test::random_floats(static_cast<size_t>(m * k), seed);
  const QuantDot* qd = quant_dot_ref(type);
  Acts a;
  const size_t rb = qd->act_row_bytes(k);
  const int64_t nb = k / quant::kQK;
  a.q8.resize(rb * static_cast<size_t>(m));
  for (int64_t t = 0; t < m; ++t) {
    qd->quantize(x.data() + t * k, a.q8.data() + t * rb, k);
    const auto* blocks = reinterpret_cast<const quant::BlockQ8_0*>(a.q8.data() + t * rb);
    for (int64_t b = 0; b < nb; ++b) {
      int32_t s = 0;
      for (int8_t q : blocks[b].qs) s += q;
      a.d.push_back(fp16_to_fp32(blocks[b].d));
      a.sum.push_back(s);
    }
  }
  a.view = PackedActs{a.q8.data(), rb, a.d.data(), a.sum.data(), nb};
  return a;
}

constexpr TensorType kTypes[] = {TensorType::Q4_0, TensorType::Q8_0};

TEST(Packed, LayoutRoundTripsAndKeepsSize) {
  for (TensorType type : kTypes) {
    const Plain p = make(type, 48, 256, 1);
    ASSERT_TRUE(packable(p.view));
    std::vector<uint8_t> packed(p.bytes.size()), back(p.bytes.size());
    pack_rows(p.view, packed.data());
    EXPECT_NE(packed, p.bytes);  // the order changed
    unpack_rows(p.view, packed.data(), back.data());
    EXPECT_EQ(back, p.bytes) << tensor_type_name(type);
  }
}

TEST(Packed, OnlyWholeGroupsOfQ4_0AndQ8_0) {
  EXPECT_FALSE(packable(make(TensorType::Q4_0, 24, 64, 2).view));  // 24 rows: not a multiple of 16
  EXPECT_FALSE(packable(make(TensorType::Q2_K, 16, 256, 3).view));
  EXPECT_TRUE(packable(make(TensorType::Q8_0, 32, 64, 4).view));
}

// The layout's reference kernel against the plain reference product (which
// dequantizes rows and sums in double): same activations, only the order of
// the float sums differs.
TEST(Packed, ReferenceKernelMatchesPlainReference) {
  constexpr int64_t kN = 32, kK = 512, kM = 3;
  for (TensorType type : kTypes) {
    const Plain p = make(type, kN, kK, 5);
    std::vector<uint8_t> packed(p.bytes.size());
    pack_rows(p.view, packed.data());
    const auto x = test::random_floats(static_cast<size_t>(kM * kK), 6);
    const Acts a = make_acts(type, kM, kK, 6);
    std::vector<float> y(kM * kN), y_ref(kM * kN);
    const PackedKernel ref = packed_kernel_ref(type);
    for (int64_t g = 0; g < kN / kPackRows; ++g) {
      ref(packed.data() + g * kPackRows * p.view.row_bytes, a.view, 0, kM, y.data() + g * kPackRows, kN);
    }
    matmul_ref(p.view, x.data(), kM, y_ref.data());
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_NEAR(y[i], y_ref[i], 1e-4 * kK / 4) << tensor_type_name(type) << " i=" << i;
    }
  }
}

TEST(Packed, Avx512KernelEqualsReferenceBitForBit) {
  if (detected_isa() < Isa::Avx512) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  constexpr int64_t kN = 48, kK = 1024;
  for (TensorType type : kTypes) {
    const Plain p = make(type, kN, kK, 7);
    std::vector<uint8_t> packed(p.bytes.size());
    pack_rows(p.view, packed.data());
    const Acts a = make_acts(type, kPackTokens + 3, kK, 8);
    for (int64_t nt = 1; nt <= kPackTokens; ++nt) {
      std::vector<float> y(static_cast<size_t>(nt * kN)), y_ref(y.size());
      for (int64_t g = 0; g < kN / kPackRows; ++g) {
        const uint8_t* group = packed.data() + g * kPackRows * p.view.row_bytes;
        packed_kernel_avx512(type)(group, a.view, 3, nt, y.data() + g * kPackRows, kN);
        packed_kernel_ref(type)(group, a.view, 3, nt, y_ref.data() + g * kPackRows, kN);
      }
      ASSERT_EQ(y, y_ref) << tensor_type_name(type) << " nt=" << nt;
    }
  }
}

// matmul() on a packed view (threads split the groups, tokens in tiles)
// against the plain reference, and a packed expert slice (MatView::rows).
TEST(Packed, MatmulOnPackedViewMatchesReference) {
  constexpr int64_t kN = 64, kK = 320;
  for (TensorType type : kTypes) {
    const Plain p = make(type, kN, kK, 9);
    std::vector<uint8_t> packed(p.bytes.size());
    pack_rows(p.view, packed.data());
    MatView w = p.view;
    w.packed = packed.data();
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      MatmulScratch scratch;
      for (int64_t m : {1, 2, 9, 70}) {
        const auto x = test::random_floats(static_cast<size_t>(m * kK), static_cast<uint32_t>(10 + m));
        std::vector<float> y(static_cast<size_t>(m * kN)), y_ref(y.size());
        matmul(w, x.data(), m, y.data(), pool, scratch);
        matmul_ref(p.view, x.data(), m, y_ref.data());
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_NEAR(y[i], y_ref[i], 1e-4 * kK / 4) << tensor_type_name(type) << " m=" << m << " i=" << i;
        }
      }
    }
    // Rows 16..47 as a matrix of their own keep the packed layout.
    const MatView slice = w.rows(16, 32);
    ASSERT_NE(slice.packed, nullptr);
    EXPECT_EQ(w.rows(8, 16).packed, nullptr);  // not on a group boundary
    const auto x = test::random_floats(2 * kK, 30);
    std::vector<float> y(2 * 32), y_ref(2 * 32);
    ThreadPool pool(2);
    MatmulScratch scratch;
    matmul(slice, x.data(), 2, y.data(), pool, scratch);
    matmul_ref(p.view.rows(16, 32), x.data(), 2, y_ref.data());
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], y_ref[i], 1e-4 * kK / 4);
  }
}

// The threads take the groups in ranges that vary from call to call (two
// groups per kernel call where the level pairs them): the products are the
// same bits with any number of threads, an odd group count included.
TEST(Packed, ProductsDoNotDependOnTheThreads) {
  constexpr int64_t kN = 16 * 37, kK = 256;
  for (TensorType type : kTypes) {
    const Plain p = make(type, kN, kK, 11);
    std::vector<uint8_t> packed(p.bytes.size());
    pack_rows(p.view, packed.data());
    MatView w = p.view;
    w.packed = packed.data();
    for (int64_t m : {1, 3, 70}) {
      const auto x = test::random_floats(static_cast<size_t>(m * kK), static_cast<uint32_t>(40 + m));
      std::vector<float> y1(static_cast<size_t>(m * kN));
      ThreadPool one(1);
      MatmulScratch scratch;
      matmul(w, x.data(), m, y1.data(), one, scratch);
      for (int threads : {2, 3}) {
        ThreadPool pool(threads);
        for (int round = 0; round < 5; ++round) {
          std::vector<float> y(y1.size());
          matmul(w, x.data(), m, y.data(), pool, scratch);
          ASSERT_EQ(std::memcmp(y.data(), y1.data(), y.size() * sizeof(float)), 0)
              << tensor_type_name(type) << " m=" << m << " threads=" << threads;
        }
      }
    }
  }
}

TEST(Packed, BufferHoldsBytes) {
  PackedBuffer b(1 << 20);
  ASSERT_NE(b.data(), nullptr);
  std::memset(b.data(), 0xAB, b.size());
  EXPECT_EQ(b.data()[b.size() - 1], 0xAB);
  PackedBuffer moved(std::move(b));
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(moved.size(), size_t{1} << 20);
}

}  // namespace
}  // namespace ferrite::cpu

namespace ferrite::cpu {
namespace {

TEST(Packed, AmxKernelEqualsReferenceBitForBit) {
  if (!amx_available() || detected_isa() < Isa::Avx512) GTEST_SKIP() << "no AMX on this CPU";
  constexpr int64_t kN = 32, kK = 2080;  // 65 blocks: chunks of 16 and a rest
  for (TensorType type : kTypes) {
    const Plain p = make(type, kN, kK, 40);
    std::vector<uint8_t> packed(p.bytes.size());
    pack_rows(p.view, packed.data());
    constexpr int64_t kNt = 2 * kAmxTokens;
    const Acts a = make_acts(type, kNt + 5, kK, 41);
    std::vector<float> y(static_cast<size_t>(kNt * kN)), y_ref(y.size());
    for (int64_t g = 0; g < kN / kPackRows; ++g) {
      const uint8_t* group = packed.data() + g * kPackRows * p.view.row_bytes;
      find_packed_kernel_amx(type)(group, a.view, 5, kNt, y.data() + g * kPackRows, kN);
      packed_kernel_ref(type)(group, a.view, 5, kNt, y_ref.data() + g * kPackRows, kN);
    }
    ASSERT_EQ(y, y_ref) << tensor_type_name(type);
  }
}

}  // namespace
}  // namespace ferrite::cpu

// F16/BF16: the layout round-trips; the layout's reference, the AVX-512 and
// AMX kernels and matmul() on packed views agree with the plain reference
// within the operands' rounding (bf16 activations 2^-8, f16 2^-11, relative
// to sum |w x|) — the summation orders differ.
namespace ferrite::cpu {
namespace {

struct FloatPlain {
  std::vector<uint8_t> bytes;
  MatView view;
};

FloatPlain make_float(TensorType type, int64_t n, int64_t k, uint32_t seed) {
  const auto f = test::random_floats(static_cast<size_t>(n * k), seed);
  FloatPlain p;
  p.bytes.resize(static_cast<size_t>(n * k) * 2);
  for (size_t i = 0; i < f.size(); ++i) {
    const uint16_t h = type == TensorType::F16 ? fp32_to_fp16(f[i]) : fp32_to_bf16(f[i]);
    std::memcpy(p.bytes.data() + 2 * i, &h, 2);
  }
  p.view = MatView{type, p.bytes.data(), k, n, static_cast<uint64_t>(k) * 2};
  return p;
}

double float_tolerance(TensorType t, int64_t k) { return (t == TensorType::BF16 ? 1e-2 : 2e-3) * k / 4.0; }

constexpr TensorType kFloatTypes[] = {TensorType::F16, TensorType::BF16};

TEST(PackedFloat, LayoutRoundTrips) {
  for (TensorType type : kFloatTypes) {
    const FloatPlain p = make_float(type, 32, 96, 50);
    ASSERT_TRUE(packable(p.view));
    std::vector<uint8_t> packed(p.bytes.size()), back(p.bytes.size());
    pack_rows(p.view, packed.data());
    unpack_rows(p.view, packed.data(), back.data());
    EXPECT_EQ(back, p.bytes);
  }
}

TEST(PackedFloat, KernelsAndMatmulMatchPlainReference) {
  constexpr int64_t kN = 48, kK = 288;
  for (TensorType type : kFloatTypes) {
    const FloatPlain p = make_float(type, kN, kK, 51);
    std::vector<uint8_t> packed(p.bytes.size());
    pack_rows(p.view, packed.data());
    MatView w = p.view;
    w.packed = packed.data();
    for (int64_t m : {1, 3, 8, 16, 37, 70}) {
      const auto x = test::random_floats(static_cast<size_t>(m * kK), static_cast<uint32_t>(52 + m));
      std::vector<float> y_ref(static_cast<size_t>(m * kN));
      matmul_ref(p.view, x.data(), m, y_ref.data());
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        MatmulScratch scratch;
        std::vector<float> y(y_ref.size());
        matmul(w, x.data(), m, y.data(), pool, scratch);
        for (size_t i = 0; i < y.size(); ++i) {
          ASSERT_NEAR(y[i], y_ref[i], float_tolerance(type, kK)) << tensor_type_name(type) << " m=" << m << " i=" << i;
        }
      }
      // Each kernel on its own, against the layout's reference.
      std::vector<uint16_t> a16(static_cast<size_t>(m * kK));
      std::vector<float> a32(a16.size());
      for (size_t i = 0; i < a16.size(); ++i) {
        a16[i] = type == TensorType::BF16 ? fp32_to_bf16(x[i]) : fp32_to_fp16(x[i]);
        a32[i] = fp16_to_fp32(fp32_to_fp16(x[i]));
      }
      const PackedFloatActs acts{type == TensorType::BF16 ? static_cast<const void*>(a16.data()) : a32.data(), kK};
      std::vector<float> y_lay(y_ref.size()), y_fast(y_ref.size());
      for (int64_t g = 0; g < kN / kPackRows; ++g) {
        const uint8_t* group = packed.data() + g * kPackRows * p.view.row_bytes;
        packed_float_kernel_ref(type)(group, acts, 0, m, y_lay.data() + g * kPackRows, kN);
        if (detected_isa() >= Isa::Avx512) {
          for (int64_t t = 0; t < m; t += kPackTokens) {
            packed_float_kernel_avx512(type)(group, acts, t, std::min(kPackTokens, m - t),
                                             y_fast.data() + t * kN + g * kPackRows, kN);
          }
          for (size_t i = 0; i < y_lay.size(); ++i) {
            ASSERT_NEAR(y_fast[i], y_lay[i], 1e-4 * kK / 4) << "avx512 " << tensor_type_name(type) << " i=" << i;
          }
        }
        const PackedFloatKernel amx = packed_float_kernel_amx_impl(type);
        if (amx != nullptr && amx_available() && m >= kAmxTokens) {
          const int64_t n_amx = m / kAmxTokens * kAmxTokens;
          amx(group, acts, 0, n_amx, y_fast.data() + g * kPackRows, kN);
          for (int64_t i = 0; i < n_amx; ++i) {
            for (int64_t r = 0; r < kPackRows; ++r) {
              const size_t at = static_cast<size_t>(i * kN + g * kPackRows + r);
              ASSERT_NEAR(y_fast[at], y_lay[at], 1e-4 * kK / 4) << "amx t=" << i << " r=" << r;
            }
          }
        }
      }
      for (size_t i = 0; i < y_lay.size(); ++i) ASSERT_NEAR(y_lay[i], y_ref[i], float_tolerance(type, kK));
      // Two adjacent groups per call: groups 0 and 1 (the third is left to the one-group kernel).
      const PackedFloatKernel pair = packed_float_pair_kernel_avx512(type);
      if (pair != nullptr && detected_isa() >= Isa::Avx512) {
        std::vector<float> y_pair(y_ref.size(), -1.0f);
        for (int64_t t = 0; t < m; t += kPackTokens) {
          pair(packed.data(), acts, t, std::min(kPackTokens, m - t), y_pair.data() + t * kN, kN);
        }
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t r = 0; r < kN; ++r) {
            const size_t at = static_cast<size_t>(i * kN + r);
            if (r < 2 * kPackRows) {
              ASSERT_NEAR(y_pair[at], y_lay[at], 1e-4 * kK / 4) << "pair t=" << i << " r=" << r;
              // F16 (decode too takes two groups per call): each lane's sums
              // in the one-group kernel's order, so its bits.
              if (type == TensorType::F16) {
                ASSERT_EQ(y_pair[at], y_fast[at]) << "F16 pair t=" << i << " r=" << r;
              }
            } else {
              ASSERT_EQ(y_pair[at], -1.0f) << "pair wrote past its 32 rows, t=" << i << " r=" << r;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu

// Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4 (cpu/packed/packed_legacy.h): lossless for every byte
// pattern; their products are tested at every level by isa_parity_test.cpp.
namespace ferrite::cpu {
namespace {

TEST(PackedLegacy, RoundTripsEveryBytePattern) {
  std::mt19937 rng(60);
  for (TensorType type :
       {TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::IQ4_NL, TensorType::MXFP4}) {
    Plain p = make(type, 32, 96, 61);
    ASSERT_TRUE(packable(p.view)) << tensor_type_name(type);
    EXPECT_FALSE(packable(make(type, 24, 96, 62).view));
    for (auto& b : p.bytes) b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> packed(p.bytes.size()), back(p.bytes.size());
    pack_rows(p.view, packed.data());
    EXPECT_NE(packed, p.bytes);
    unpack_rows(p.view, packed.data(), back.data());
    EXPECT_EQ(back, p.bytes) << tensor_type_name(type);
  }
}

}  // namespace
}  // namespace ferrite::cpu

// MXFP4 packed at AVX2 against the layout's reference bit for bit on random
// bytes: every code and scale byte 0..191 (subnormal scales 0 and 1 included;
// larger ones overflow the products to infinities, whose sums are no test).
namespace ferrite::cpu {
namespace {

TEST(PackedLegacy, Mxfp4Avx2EqualsLayoutReferenceOnEveryScaleByte) {
  const Isa saved = active_isa();
  if (set_isa(Isa::Avx2) != Isa::Avx2) GTEST_SKIP() << "no AVX2 on this CPU";
  set_isa(saved);
  constexpr int64_t kN = 32, kK = 256;
  const TensorType type = TensorType::MXFP4;
  Plain p = make(type, kN, kK, 70);
  std::mt19937 rng(71);
  for (auto& b : p.bytes) b = static_cast<uint8_t>(rng());
  const int64_t blocks = static_cast<int64_t>(p.bytes.size()) / 17;
  for (int64_t b = 0; b < blocks; ++b) p.bytes[static_cast<size_t>(b * 17)] = static_cast<uint8_t>((b * 37) % 192);
  p.bytes[0] = 0;
  p.bytes[17] = 1;
  p.bytes[34] = 2;
  std::vector<uint8_t> packed(p.bytes.size());
  pack_rows(p.view, packed.data());
  const Acts a = make_acts(type, kPackTokens + 3, kK, 72);
  const PackedKernel fast = packed_legacy_avx2(type);
  ASSERT_NE(fast, nullptr);
  for (int64_t nt = 1; nt <= kPackTokens; ++nt) {
    std::vector<float> y(static_cast<size_t>(nt * kN), -1.0f), y_ref(y.size(), -2.0f);
    for (int64_t g = 0; g < kN / kPackRows; ++g) {
      const uint8_t* group = packed.data() + g * kPackRows * p.view.row_bytes;
      fast(group, a.view, 3, nt, y.data() + g * kPackRows, kN);
      packed_kernel_ref(type)(group, a.view, 3, nt, y_ref.data() + g * kPackRows, kN);
    }
    ASSERT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)), 0) << "nt=" << nt;
  }
}

}  // namespace
}  // namespace ferrite::cpu
