// The IQ and TQ weight types and MXFP4 on the GPU (issue 9, 27) against the CPU reference:
// random blocks with valid scales (every grid index and sign pattern the
// bytes can name), and, for the products, also blocks from the CPU's
// quantizers. Every LinearRunner path: the exact mode (the CPU's
// dequantized product), the GEMV for 1..kGemmMinRows rows, dequantize +
// cuBLAS above that; the dequantizer bit for bit; get_rows; row slices.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/fp16.h"
#include "cpu/dot/act_quant.h"
#include "cpu/matmul.h"
#include "cuda/kernels/iq_tables.h"
#include "cuda/backend/linear.h"
#include "device_util.h"
#include "quant/blocks.h"
#include "quant/type_traits.h"

namespace ferrite::cuda {
namespace {

using test::fresh_rng;
using test::relative_error;
using test::random_floats;
using test::to_device;
using test::to_host;

const std::vector<TensorType> kIqTypes = {TensorType::IQ4_NL,  TensorType::IQ4_XS, TensorType::TQ2_0,
                                          TensorType::TQ1_0,   TensorType::IQ2_XXS, TensorType::IQ2_XS,
                                          TensorType::IQ2_S,   TensorType::IQ3_XXS, TensorType::IQ3_S,
                                          TensorType::IQ1_S,   TensorType::IQ1_M,  TensorType::MXFP4};

int64_t block_elems(TensorType t) {
  return t == TensorType::IQ4_NL || t == TensorType::MXFP4 ? quant::kQK : quant::kQKK;
}

// Byte offset of the f16 scale d in a block (IQ1_M has none: see below).
size_t d_offset(TensorType t) {
  using namespace quant;
  switch (t) {
    case TensorType::TQ1_0: return offsetof(BlockTQ1_0, d);
    case TensorType::TQ2_0: return offsetof(BlockTQ2_0, d);
    default: return 0;  // the IQ types start with d
  }
}

// n rows of k values: random bytes, each block's scale set to a random
// normal f16 of either sign (IQ1_M: spread over the top nibbles of its four
// u16 scales).
std::vector<uint8_t> random_blocks(TensorType t, int64_t n, int64_t k, std::mt19937& rng) {
  const uint64_t block_bytes = tensor_row_bytes(t, static_cast<uint64_t>(block_elems(t)));
  const int64_t blocks = n * (k / block_elems(t));
  std::vector<uint8_t> bytes(static_cast<size_t>(blocks) * block_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : bytes) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> mag(0.25f, 2.0f);
  std::bernoulli_distribution neg(0.5);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* blk = bytes.data() + b * block_bytes;
    const uint16_t d = fp32_to_fp16((neg(rng) ? -1.0f : 1.0f) * mag(rng) * 1e-2f);
    if (t == TensorType::MXFP4) {  // the E8M0 byte: 2^-8 .. 2^7 x E2M1 (CPU twin: quant::mxfp4_scale)
      blk[0] = static_cast<uint8_t>(119 + byte(rng) % 16);
    } else if (t == TensorType::IQ1_M) {
      auto* sc = reinterpret_cast<uint16_t*>(blk + offsetof(quant::BlockIQ1_M, scales));
      for (int i = 0; i < 4; ++i) sc[i] = static_cast<uint16_t>((sc[i] & 0x0FFF) | (((d >> (4 * i)) & 0xF) << 12));
    } else {
      std::memcpy(blk + d_offset(t), &d, sizeof(d));
    }
  }
  return bytes;
}

// n rows of k values from the CPU's quantizer.
std::vector<uint8_t> quantized_blocks(TensorType t, int64_t n, int64_t k, std::mt19937& rng) {
  return test::quantize_rows(t, random_floats(static_cast<size_t>(n * k), rng), n, k);
}

std::vector<float> dequantized(TensorType t, const std::vector<uint8_t>& bytes, int64_t n, int64_t k) {
  std::vector<float> out(static_cast<size_t>(n * k));
  const uint64_t rb = tensor_row_bytes(t, static_cast<uint64_t>(k));
  const quant::TypeTraits& tr = quant::type_traits(t);
  for (int64_t r = 0; r < n; ++r) tr.to_float_ref(bytes.data() + r * rb, out.data() + r * k, k);
  return out;
}


TEST(GpuIq, EveryTypeIsSupported) {
  for (TensorType t : kIqTypes) {
    EXPECT_TRUE(gpu_supports(t)) << tensor_type_name(t);
    EXPECT_TRUE(dequant_f16_supports(t)) << tensor_type_name(t);
  }
}

// dequantize_f32 gives the CPU reference dequantizer's bits, dequantize_f16
// those rounded to f16, get_rows the rows' bits; on a row slice too.
TEST(GpuIq, DequantEqualsReferenceBits) {
  FERRITE_REQUIRE_GPU();
  constexpr int64_t kN = 13, kK = 768, kR0 = 5, kRows = 6;
  std::mt19937 rng = fresh_rng();
  for (TensorType t : kIqTypes) {
    for (bool random : {true, false}) {
      SCOPED_TRACE(tensor_type_name(t) + (random ? " random blocks" : " quantized"));
      const std::vector<uint8_t> bytes =
          random ? random_blocks(t, kN, kK, rng) : quantized_blocks(t, kN, kK, rng);
      const std::vector<float> ref = dequantized(t, bytes, kN, kK);
      DeviceBuffer wbuf;
      const GpuMatrix g = upload_matrix(t, kN, kK, bytes.data(), wbuf, "w");
      DeviceBuffer f32(static_cast<size_t>(kN * kK) * sizeof(float));
      DeviceBuffer f16(static_cast<size_t>(kN * kK) * sizeof(uint16_t));
      dequantize_f32(g, f32.as<float>(), nullptr);
      dequantize_f16(g, f16.as<uint16_t>(), nullptr);
      const std::vector<float> got32 = to_host<float>(f32, ref.size());
      const std::vector<uint16_t> got16 = to_host<uint16_t>(f16, ref.size());
      for (size_t i = 0; i < ref.size(); ++i) {
        ASSERT_EQ(std::memcmp(&got32[i], &ref[i], sizeof(float)), 0)
            << "f32 element " << i << ": " << got32[i] << " vs " << ref[i];
        ASSERT_EQ(got16[i], fp32_to_fp16(ref[i])) << "f16 element " << i;
      }
      dequantize_f32(row_slice(g, kR0, kRows), f32.as<float>(), nullptr);
      const std::vector<float> part = to_host<float>(f32, static_cast<size_t>(kRows * kK));
      for (size_t i = 0; i < part.size(); ++i) {
        ASSERT_EQ(std::memcmp(&part[i], &ref[kR0 * kK + i], sizeof(float)), 0) << "slice element " << i;
      }
      const std::vector<int32_t> ids = {12, 0, 7, 7};
      DeviceBuffer idd = to_device(ids), xd = test::poisoned(ids.size() * kK);
      get_rows(g, idd.as<int32_t>(), static_cast<int64_t>(ids.size()), xd.as<float>(), nullptr);
      const std::vector<float> rows = to_host<float>(xd, ids.size() * kK);
      for (size_t i = 0; i < rows.size(); ++i) {
        const float want = ref[static_cast<size_t>(ids[i / kK]) * kK + i % kK];
        ASSERT_EQ(std::memcmp(&rows[i], &want, sizeof(float)), 0) << "get_rows element " << i;
      }
    }
  }
}

struct Case {
  TensorType type;
  int64_t n, k, m;
  bool exact;
  bool random;  // random blocks (else the CPU's quantizer)
  double tol;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << tensor_type_name(c.type) << " n=" << c.n << " k=" << c.k << " m=" << c.m << (c.exact ? " exact" : " fast")
      << (c.random ? " random" : " quantized");
}

// LinearRunner against cpu::matmul_ref (the same 8-bit activations,
// dequantized rows, double sums); above kGemmMinRows rows outside the exact
// mode against the f16-rounded operands (as GpuLinearGemm). Also
// accumulation, and rows [3, n - 2) as a matrix of their own.
class GpuIqLinear : public ::testing::TestWithParam<Case> {};

TEST_P(GpuIqLinear, MatchesCpuReference) {
  FERRITE_REQUIRE_GPU();
  const Case c = GetParam();
  const test::ProductMode mode(c.exact);
  std::mt19937 rng = fresh_rng();
  const std::vector<uint8_t> bytes = c.random ? random_blocks(c.type, c.n, c.k, rng)
                                              : quantized_blocks(c.type, c.n, c.k, rng);
  const std::vector<float> x = random_floats(static_cast<size_t>(c.m * c.k), rng, -2.0f, 2.0f);
  const uint64_t rb = tensor_row_bytes(c.type, static_cast<uint64_t>(c.k));
  std::vector<float> ref(static_cast<size_t>(c.m * c.n));
  const bool gemm = !c.exact && c.m > kGemmMinRows;
  if (gemm) {
    std::vector<float> w_ref = dequantized(c.type, bytes, c.n, c.k);
    for (auto& v : w_ref) v = fp16_to_fp32(fp32_to_fp16(v));
    std::vector<float> x_ref(x.size());
    cpu::act_quant_round_trip(cpu::act_quant_for(c.type), x.data(), x_ref.data(), static_cast<int64_t>(x.size()));
    for (auto& v : x_ref) v = fp16_to_fp32(fp32_to_fp16(v));
    for (int64_t t = 0; t < c.m; ++t) {
      for (int64_t r = 0; r < c.n; ++r) {
        double s = 0;
        for (int64_t i = 0; i < c.k; ++i) s += static_cast<double>(w_ref[r * c.k + i]) * x_ref[t * c.k + i];
        ref[t * c.n + r] = static_cast<float>(s);
      }
    }
  } else {
    cpu::matmul_ref(cpu::MatView{c.type, bytes.data(), c.k, c.n, rb}, x.data(), c.m, ref.data());
  }

  DeviceBuffer wbuf;
  const GpuMatrix g = upload_matrix(c.type, c.n, c.k, bytes.data(), wbuf, "w");
  if (!c.exact && !gemm) {
    ASSERT_TRUE(gemv_iq_supports(g));
  }
  DeviceBuffer xd = to_device(x);
  Activation act;
  act.set(xd.as<float>(), c.m, c.k);
  LinearRunner lin(nullptr);
  DeviceBuffer yd = test::poisoned(ref.size());
  lin.run(g, act, yd.as<float>());
  const double err = relative_error(to_host<float>(yd, ref.size()), ref);
  std::printf("  %s m=%lld %s: relative error %.3g\n", tensor_type_name(c.type).c_str(),
              static_cast<long long>(c.m), c.exact ? "exact" : "fast", err);
  EXPECT_LE(err, c.tol);

  lin.run(g, act, yd.as<float>(), true);
  std::vector<float> twice = to_host<float>(yd, ref.size());
  for (auto& v : twice) v *= 0.5f;
  EXPECT_LE(relative_error(twice, ref), c.tol);

  constexpr int64_t kR0 = 3;
  const int64_t rows = c.n - kR0 - 2;
  DeviceBuffer yp = test::poisoned(static_cast<size_t>(c.m * rows));
  lin.run(row_slice(g, kR0, rows), act, yp.as<float>());
  const std::vector<float> got = to_host<float>(yp, static_cast<size_t>(c.m * rows));
  std::vector<float> want(got.size());
  for (int64_t t = 0; t < c.m; ++t) {
    for (int64_t r = 0; r < rows; ++r) want[t * rows + r] = ref[t * c.n + kR0 + r];
  }
  EXPECT_LE(relative_error(got, want), c.tol);
}

std::vector<Case> linear_cases() {
  // Exact mode: the CPU's f32 dot of the dequantized rows vs double sums.
  constexpr double kExactTol = 2e-6;
  // GEMV: per-chunk f32 terms in another order (as GpuGemv).
  constexpr double kGemvTol = 1e-5;
  // cuBLAS on f16 operands vs double sums of the same operands (as GpuLinearGemm).
  constexpr double kGemmTol = 2e-5;
  std::vector<Case> out;
  for (TensorType t : kIqTypes) {
    for (bool random : {true, false}) {
      for (int64_t m : {1, 3, 20}) out.push_back({t, 45, 1024, m, true, random, kExactTol});
      for (int64_t m : {1, 2, 3, 4, 7, 16}) out.push_back({t, 45, 2816, m, false, random, kGemvTol});
      out.push_back({t, 70, 512, kGemmMinRows + 1, false, random, kGemmTol});
    }
    out.push_back({t, 4096, 256, 1, false, true, kGemvTol});
  }
  // MXFP4 rows of an odd number of 17-byte blocks: rows (and row slices) at odd addresses.
  for (int64_t m : {1, 3}) out.push_back({TensorType::MXFP4, 45, 1056, m, false, true, kGemvTol});
  out.push_back({TensorType::MXFP4, 45, 1056, 2, true, false, kExactTol});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Types, GpuIqLinear, ::testing::ValuesIn(linear_cases()));

// Rows that are not whole blocks are refused with an error.
TEST(GpuIq, BadShapesThrow) {
  std::vector<uint8_t> bytes(4096);
  DeviceBuffer buf;
  EXPECT_THROW(upload_matrix(TensorType::IQ2_XXS, 2, 128, bytes.data(), buf, "w"), InvalidArgument);
  EXPECT_THROW(upload_matrix(TensorType::IQ4_NL, 2, 48, bytes.data(), buf, "w"), InvalidArgument);
}

}  // namespace
}  // namespace ferrite::cuda
