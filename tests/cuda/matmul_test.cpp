// Quantized and float linear layers on the GPU against the CPU reference
// (cpu::matmul_ref: the same 8-bit activation rounding, dequantized rows,
// sums in double), on fresh random inputs.
#include <cmath>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/fp16.h"
#include "cpu/dot/act_quant.h"
#include "cpu/matmul.h"
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

// The quantized types the GPU takes: those of the first versions, and those
// added after (issue 9: Q5_K, Q5_0, Q5_1, Q4_1, Q3_K, Q2_K).
const std::vector<TensorType> kFirstTypes = {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K};
const std::vector<TensorType> kNewTypes = {TensorType::Q5_K, TensorType::Q5_0, TensorType::Q5_1,
                                           TensorType::Q4_1, TensorType::Q3_K, TensorType::Q2_K};
std::vector<TensorType> all_quant_types() {
  std::vector<TensorType> out = kFirstTypes;
  out.insert(out.end(), kNewTypes.begin(), kNewTypes.end());
  return out;
}
// The 32-element types among them (rows of any multiple of 32).
bool block32(TensorType t) {
  return t == TensorType::Q4_0 || t == TensorType::Q8_0 || t == TensorType::Q5_0 || t == TensorType::Q5_1 ||
         t == TensorType::Q4_1;
}

struct Quantized {
  std::vector<uint8_t> bytes;
  uint64_t row_bytes;
};

Quantized quantize(TensorType t, const std::vector<float>& w, int64_t n, int64_t k) {
  return {test::quantize_rows(t, w, n, k), tensor_row_bytes(t, static_cast<uint64_t>(k))};
}

struct Case {
  TensorType type;
  int64_t n, k, m;
  double tol;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << tensor_type_name(c.type) << " n=" << c.n << " k=" << c.k << " m=" << c.m;
}

class GpuLinear : public ::testing::TestWithParam<Case> {};

TEST_P(GpuLinear, MatchesCpuReference) {
  FERRITE_REQUIRE_GPU();
  const test::ProductMode exact(true);
  const Case c = GetParam();
  std::mt19937 rng = fresh_rng();
  const std::vector<float> w = random_floats(static_cast<size_t>(c.n * c.k), rng);
  const std::vector<float> x = random_floats(static_cast<size_t>(c.m * c.k), rng, -2.0f, 2.0f);
  const Quantized q = quantize(c.type, w, c.n, c.k);

  std::vector<float> ref(static_cast<size_t>(c.m * c.n));
  const cpu::MatView view{c.type, q.bytes.data(), c.k, c.n, q.row_bytes};
  // F16 products take f16-rounded activations (as the CPU's fast path does).
  std::vector<float> x_ref = x;
  if (c.type == TensorType::F16) {
    for (auto& v : x_ref) v = fp16_to_fp32(fp32_to_fp16(v));
  }
  cpu::matmul_ref(view, x_ref.data(), c.m, ref.data());

  DeviceBuffer wbuf;
  const GpuMatrix g = upload_matrix(c.type, c.n, c.k, q.bytes.data(), wbuf, "w");
  DeviceBuffer xd = to_device(x);
  DeviceBuffer yd = test::poisoned(ref.size());
  Activation act;
  act.set(xd.as<float>(), c.m, c.k);
  LinearRunner lin(nullptr);
  lin.run(g, act, yd.as<float>());
  const std::vector<float> y = to_host<float>(yd, ref.size());
  EXPECT_LE(relative_error(y, ref), c.tol);

  // Accumulating into the result adds the same product again.
  lin.run(g, act, yd.as<float>(), true);
  std::vector<float> twice = to_host<float>(yd, ref.size());
  for (auto& v : twice) v *= 0.5f;
  EXPECT_LE(relative_error(twice, ref), c.tol);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  // Integer dot products against double sums of the same rounded operands.
  constexpr double kQuantTol = 2e-6;
  // f16 operands (exact products) and f32 sums against double sums.
  constexpr double kFloatTol = 2e-6;
  // (Q4_1/Q5_0/Q5_1: f32 dots of the dequantized rows, as the CPU's.)
  for (TensorType t : all_quant_types()) {
    for (int64_t m : {1, 2, 3, 8, 13}) out.push_back({t, 67, 1024, m, kQuantTol});
    out.push_back({t, 4096, 256, 1, kQuantTol});
  }
  // The dequantized product on rows of 35 chunks (its row blocks: GpuLinearExactBlocks).
  for (TensorType t : {TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1}) {
    out.push_back({t, 19, 1120, 3, kQuantTol});
  }
  for (TensorType t : {TensorType::F16, TensorType::F32}) {
    for (int64_t m : {1, 5, 40}) out.push_back({t, 129, 172, m, kFloatTol});
    for (int64_t m : {1, 20}) out.push_back({t, 300, 4096, m, kFloatTol});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Types, GpuLinear, ::testing::ValuesIn(cases()));

// Outside the exact mode: prefill through cuBLAS (more than kGemmMinRows
// rows), and F16 weights of small batches (any summation order). The weights as the
// CPU's reference dequantizer gives them, rounded to f16, times the
// activations (for quantized weights first through the CPU's 8-bit
// activation blocks) rounded to f16, summed in double. The products of f16 operands
// are exact in f32 and the dequantized values are the reference's (the same
// f32 operations, one rounding to f16), so only the f32 sums differ:
// k * 2^-24 relative at worst, far less for random signs.
class GpuLinearGemm : public ::testing::TestWithParam<Case> {};

TEST_P(GpuLinearGemm, MatchesF16RoundedReference) {
  FERRITE_REQUIRE_GPU();
  const test::ProductMode fast(false);
  const Case c = GetParam();
  std::mt19937 rng = fresh_rng();
  const std::vector<float> w = random_floats(static_cast<size_t>(c.n * c.k), rng);
  std::vector<float> x = random_floats(static_cast<size_t>(c.m * c.k), rng, -2.0f, 2.0f);
  const Quantized q = quantize(c.type, w, c.n, c.k);

  // Reference operands: dequantized rows and activations, both rounded to f16.
  std::vector<float> w_ref(w.size());
  if (c.type == TensorType::F16) {
    for (size_t i = 0; i < w.size(); ++i) w_ref[i] = fp16_to_fp32(fp32_to_fp16(w[i]));
  } else {
    const quant::TypeTraits& tr = quant::type_traits(c.type);
    for (int64_t r = 0; r < c.n; ++r) tr.to_float_ref(q.bytes.data() + r * q.row_bytes, w_ref.data() + r * c.k, c.k);
    for (auto& v : w_ref) v = fp16_to_fp32(fp32_to_fp16(v));
  }
  // Quantized weights: the activations through the CPU's 8-bit blocks first.
  std::vector<float> x_ref = x;
  if (c.type != TensorType::F16) {
    // (Q8_1, for Q4_1/Q5_1: Q8_0's values; the f16 product leaves out the offset term's correction.)
    cpu::act_quant_round_trip(cpu::act_quant_for(c.type), x.data(), x_ref.data(), static_cast<int64_t>(x.size()));
  }
  for (auto& v : x_ref) v = fp16_to_fp32(fp32_to_fp16(v));
  std::vector<float> ref(static_cast<size_t>(c.m * c.n));
  for (int64_t t = 0; t < c.m; ++t) {
    for (int64_t r = 0; r < c.n; ++r) {
      double s = 0;
      for (int64_t i = 0; i < c.k; ++i) s += static_cast<double>(w_ref[r * c.k + i]) * x_ref[t * c.k + i];
      ref[t * c.n + r] = static_cast<float>(s);
    }
  }

  DeviceBuffer wbuf;
  const GpuMatrix g = upload_matrix(c.type, c.n, c.k, q.bytes.data(), wbuf, "w");
  DeviceBuffer xd = to_device(x);
  DeviceBuffer yd = test::poisoned(ref.size());
  Activation act;
  act.set(xd.as<float>(), c.m, c.k);
  LinearRunner lin(nullptr);
  lin.run(g, act, yd.as<float>());
  const std::vector<float> y = to_host<float>(yd, ref.size());
  const double err = relative_error(y, ref);
  std::printf("  %s m=%lld: relative error %.3g\n", tensor_type_name(c.type).c_str(), static_cast<long long>(c.m),
              err);
  EXPECT_LE(err, c.tol);

  // Accumulating adds the same product again.
  lin.run(g, act, yd.as<float>(), true);
  std::vector<float> twice = to_host<float>(yd, ref.size());
  for (auto& v : twice) v *= 0.5f;
  EXPECT_LE(relative_error(twice, ref), c.tol);

  // A scratch of 7 rows: the product runs in row blocks (the last one short).
  lin.set_scratch_limit(7 * c.k);
  DeviceBuffer yb = test::poisoned(ref.size());
  lin.run(g, act, yb.as<float>());
  EXPECT_LE(relative_error(to_host<float>(yb, ref.size()), ref), c.tol);
}

std::vector<Case> gemm_cases() {
  constexpr double kGemmTol = 2e-5;
  std::vector<Case> out;
  // Quantized weights: batches above kMmaMaxRows (smaller ones take matmul_mma, GpuMma below).
  for (TensorType t : all_quant_types()) out.push_back({t, 96, 1024, kMmaMaxRows + 1, kGemmTol});
  // Types matmul_mma does not take go to cuBLAS above kGemmMinRows rows.
  for (TensorType t : {TensorType::Q5_0, TensorType::Q4_1, TensorType::Q2_K}) {
    out.push_back({t, 70, 512, kGemmMinRows + 1, kGemmTol});
  }
  for (int64_t m : {kGemmMinRows + 1, int64_t{64}}) out.push_back({TensorType::F16, 96, 1024, m, kGemmTol});
  out.push_back({TensorType::Q4_K, 300, 4096, kMmaMaxRows + 40, kGemmTol});
  // Small F16 batches outside the exact mode: the warp-per-row product (one
  // round of loads per row at k = 2048; at k = 4104 two, the last partial;
  // 7 rows: kernels for 4, 2 and 1 rows).
  for (int64_t m : {1, 3, 5, 16}) out.push_back({TensorType::F16, 300, 2048, m, kGemmTol});
  for (int64_t m : {1, 2, 7}) out.push_back({TensorType::F16, 77, 4104, m, kGemmTol});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Types, GpuLinearGemm, ::testing::ValuesIn(gemm_cases()));

// The int8 tensor-core product (matmul_mma.cu, through LinearRunner with
// every batch size routed to it) against the CPU reference (the same 8-bit
// activations, dequantized rows, double sums). Its f32 sums of exact integer
// chunk or super-block sums differ from double sums by a few ulp per term.
class GpuMma : public ::testing::TestWithParam<Case> {};

TEST_P(GpuMma, MatchesCpuReference) {
  FERRITE_REQUIRE_GPU();
  const Case c = GetParam();
  if (!matmul_mma_supports(GpuMatrix{c.type, 1, 256, nullptr, nullptr, 0})) {
    GTEST_SKIP() << "no int8 mma on this device";
  }
  const test::ProductMode fast(false);
  std::mt19937 rng = fresh_rng();
  const std::vector<float> w = random_floats(static_cast<size_t>(c.n * c.k), rng);
  const std::vector<float> x = random_floats(static_cast<size_t>(c.m * c.k), rng, -2.0f, 2.0f);
  const Quantized q = quantize(c.type, w, c.n, c.k);
  std::vector<float> ref(static_cast<size_t>(c.m * c.n));
  cpu::matmul_ref(cpu::MatView{c.type, q.bytes.data(), c.k, c.n, q.row_bytes}, x.data(), c.m, ref.data());

  DeviceBuffer wbuf;
  const GpuMatrix g = upload_matrix(c.type, c.n, c.k, q.bytes.data(), wbuf, "w");
  DeviceBuffer xd = to_device(x);
  Activation act;
  act.set(xd.as<float>(), c.m, c.k);
  LinearRunner lin(nullptr);
  lin.set_mma_rows(1, int64_t{1} << 30);
  DeviceBuffer yd = test::poisoned(ref.size());
  lin.run(g, act, yd.as<float>());
  const double err = relative_error(to_host<float>(yd, ref.size()), ref);
  std::printf("  %s n=%lld k=%lld m=%lld (%s): relative error %.3g\n", tensor_type_name(c.type).c_str(),
              static_cast<long long>(c.n), static_cast<long long>(c.k), static_cast<long long>(c.m),
              matmul_mma_supports(g) ? "mma" : "fallback", err);
  EXPECT_LE(err, c.tol);

  // Accumulating adds the same product again (split or not).
  lin.run(g, act, yd.as<float>(), true);
  std::vector<float> twice = to_host<float>(yd, ref.size());
  for (auto& v : twice) v *= 0.5f;
  EXPECT_LE(relative_error(twice, ref), c.tol);
}

std::vector<Case> mma_cases() {
  // Per-chunk or per-super-block f32 terms summed in f32: k / 32 terms of a
  // few ulp each, far below this for random signs.
  constexpr double kMmaTol = 1e-5;
  std::vector<Case> out;
  for (TensorType t : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
    // Rows not a multiple of a block's 64; token counts around each tile
    // size (8, 16, 32, 64) and several token blocks (65, 300).
    for (int64_t m : {1, 2, 8, 9, 17, 40, 64, 65, 100, 300}) out.push_back({t, 101, 1024, m, kMmaTol});
    // Few row blocks and a long k: k split across blocks.
    out.push_back({t, 70, 4096, 33, kMmaTol});
    // An odd number of super-blocks per row (Q6_K rows then start at
    // 2-byte offsets) split unevenly; a 43-super-block k (ffn_down of 7B).
    out.push_back({t, 67, 2816, 24, kMmaTol});
    out.push_back({t, 40, 11008, 5, kMmaTol});
  }
  // k not a multiple of 256: not taken by matmul_mma (the runner falls back).
  for (TensorType t : {TensorType::Q4_0, TensorType::Q8_0}) out.push_back({t, 64, 1120, 9, kMmaTol});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Types, GpuMma, ::testing::ValuesIn(mma_cases()));

// The bandwidth GEMV (gemv_quant.cu) for 1..kGemvMaxRows activation rows,
// through LinearRunner outside the exact mode, against the CPU reference
// (the same 8-bit activations, dequantized rows, double sums): per-chunk f32
// terms summed in another order, as for matmul_mma. Also a view of rows
// starting inside the matrix (the stacked Q|K|V parts), which for Q6_K puts
// rows at 2-byte offsets.
class GpuGemv : public ::testing::TestWithParam<Case> {};

TEST_P(GpuGemv, MatchesCpuReference) {
  FERRITE_REQUIRE_GPU();
  const Case c = GetParam();
  const test::ProductMode fast(false);
  std::mt19937 rng = fresh_rng();
  const std::vector<float> w = random_floats(static_cast<size_t>(c.n * c.k), rng);
  const std::vector<float> x = random_floats(static_cast<size_t>(c.m * c.k), rng, -2.0f, 2.0f);
  const Quantized q = quantize(c.type, w, c.n, c.k);
  std::vector<float> ref(static_cast<size_t>(c.m * c.n));
  cpu::matmul_ref(cpu::MatView{c.type, q.bytes.data(), c.k, c.n, q.row_bytes}, x.data(), c.m, ref.data());

  DeviceBuffer wbuf;
  const GpuMatrix g = upload_matrix(c.type, c.n, c.k, q.bytes.data(), wbuf, "w");
  ASSERT_TRUE(gemv_quant_supports(g, c.m));
  DeviceBuffer xd = to_device(x);
  Activation act;
  act.set(xd.as<float>(), c.m, c.k);
  LinearRunner lin(nullptr);
  DeviceBuffer yd = test::poisoned(ref.size());
  lin.run(g, act, yd.as<float>());
  const double err = relative_error(to_host<float>(yd, ref.size()), ref);
  std::printf("  %s n=%lld k=%lld m=%lld: relative error %.3g\n", tensor_type_name(c.type).c_str(),
              static_cast<long long>(c.n), static_cast<long long>(c.k), static_cast<long long>(c.m), err);
  EXPECT_LE(err, c.tol);

  // Accumulating adds the same product again.
  lin.run(g, act, yd.as<float>(), true);
  std::vector<float> twice = to_host<float>(yd, ref.size());
  for (auto& v : twice) v *= 0.5f;
  EXPECT_LE(relative_error(twice, ref), c.tol);

  // Rows [r0, n - 2) as a matrix of their own.
  constexpr int64_t kR0 = 3;
  const int64_t rows = c.n - kR0 - 2;
  const GpuMatrix part = row_slice(g, kR0, rows);
  ASSERT_TRUE(gemv_quant_supports(part, c.m));
  DeviceBuffer yp = test::poisoned(static_cast<size_t>(c.m * rows));
  lin.run(part, act, yp.as<float>());
  const std::vector<float> got = to_host<float>(yp, static_cast<size_t>(c.m * rows));
  std::vector<float> want(got.size());
  for (int64_t t = 0; t < c.m; ++t) {
    for (int64_t r = 0; r < rows; ++r) want[t * rows + r] = ref[t * c.n + kR0 + r];
  }
  EXPECT_LE(relative_error(got, want), c.tol);
}

std::vector<Case> gemv_cases() {
  constexpr double kGemvTol = 1e-5;
  std::vector<Case> out;
  for (TensorType t : all_quant_types()) {
    // Rows not a multiple of the block's 8; one round per row (4096), an odd
    // super-block count (2816: Q6_K rows at 2-byte offsets, a partial round),
    // several rounds with a partial last one (11008: ffn_down of 7B).
    for (int64_t m = 1; m <= kGemvMaxRows; ++m) {
      out.push_back({t, 67, 4096, m, kGemvTol});
      out.push_back({t, 45, 2816, m, kGemvTol});
    }
    out.push_back({t, 29, 11008, 1, kGemvTol});
    out.push_back({t, 21, 11008, kGemvMaxRows, kGemvTol});
  }
  // 32-element types: rows of 35 chunks (not a whole group of staged units).
  for (TensorType t : all_quant_types()) {
    if (block32(t)) out.push_back({t, 19, 1120, 3, kGemvTol});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Types, GpuGemv, ::testing::ValuesIn(gemv_cases()));

// Types matmul_mma does not take: batches of kGemvMaxRows + 1 .. kGemmMinRows
// rows outside the exact mode run the GEMV a group of rows at a time
// (LinearRunner::gemv_groups), against the CPU reference as above.
class GpuGemvGroups : public ::testing::TestWithParam<Case> {};

TEST_P(GpuGemvGroups, MatchesCpuReference) {
  FERRITE_REQUIRE_GPU();
  const Case c = GetParam();
  const test::ProductMode fast(false);
  std::mt19937 rng = fresh_rng();
  const std::vector<float> w = random_floats(static_cast<size_t>(c.n * c.k), rng);
  const std::vector<float> x = random_floats(static_cast<size_t>(c.m * c.k), rng, -2.0f, 2.0f);
  const Quantized q = quantize(c.type, w, c.n, c.k);
  std::vector<float> ref(static_cast<size_t>(c.m * c.n));
  cpu::matmul_ref(cpu::MatView{c.type, q.bytes.data(), c.k, c.n, q.row_bytes}, x.data(), c.m, ref.data());

  DeviceBuffer wbuf;
  const GpuMatrix g = upload_matrix(c.type, c.n, c.k, q.bytes.data(), wbuf, "w");
  ASSERT_FALSE(matmul_mma_supports(g));
  ASSERT_TRUE(gemv_quant_supports(g, kGemvMaxRows));
  DeviceBuffer xd = to_device(x);
  Activation act;
  act.set(xd.as<float>(), c.m, c.k);
  LinearRunner lin(nullptr);
  DeviceBuffer yd = test::poisoned(ref.size());
  lin.run(g, act, yd.as<float>());
  const double err = relative_error(to_host<float>(yd, ref.size()), ref);
  std::printf("  %s m=%lld: relative error %.3g\n", tensor_type_name(c.type).c_str(), static_cast<long long>(c.m), err);
  EXPECT_LE(err, c.tol);
  lin.run(g, act, yd.as<float>(), true);
  std::vector<float> twice = to_host<float>(yd, ref.size());
  for (auto& v : twice) v *= 0.5f;
  EXPECT_LE(relative_error(twice, ref), c.tol);
}

std::vector<Case> gemv_group_cases() {
  constexpr double kGemvTol = 1e-5;
  std::vector<Case> out;
  for (TensorType t : {TensorType::Q5_0, TensorType::Q5_1, TensorType::Q4_1, TensorType::Q3_K, TensorType::Q2_K}) {
    for (int64_t m : {kGemvMaxRows + 1, int64_t{11}, kGemmMinRows}) out.push_back({t, 45, 1024, m, kGemvTol});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Types, GpuGemvGroups, ::testing::ValuesIn(gemv_group_cases()));

// The exact mode's dequantized product (Q4_1/Q5_0/Q5_1) in row blocks: a
// scratch of 7 rows, the last block short, accumulating into y.
TEST(GpuLinearExactBlocks, RowBlocksMatchOneBlock) {
  FERRITE_REQUIRE_GPU();
  const test::ProductMode exact(true);
  constexpr int64_t kN = 45, kK = 512, kM = 3;
  std::mt19937 rng = fresh_rng();
  for (TensorType t : {TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1}) {
    SCOPED_TRACE(tensor_type_name(t));
    const Quantized q = quantize(t, random_floats(static_cast<size_t>(kN * kK), rng), kN, kK);
    const std::vector<float> x = random_floats(static_cast<size_t>(kM * kK), rng, -2.0f, 2.0f);
    DeviceBuffer wbuf;
    const GpuMatrix g = upload_matrix(t, kN, kK, q.bytes.data(), wbuf, "w");
    DeviceBuffer xd = to_device(x);
    Activation act;
    act.set(xd.as<float>(), kM, kK);
    LinearRunner whole(nullptr), blocks(nullptr);
    blocks.set_scratch_limit(7 * kK);
    DeviceBuffer y1 = test::poisoned(static_cast<size_t>(kM * kN)), y2 = test::poisoned(static_cast<size_t>(kM * kN));
    whole.run(g, act, y1.as<float>());
    blocks.run(g, act, y2.as<float>());
    const std::vector<float> a = to_host<float>(y1, static_cast<size_t>(kM * kN));
    const std::vector<float> b = to_host<float>(y2, static_cast<size_t>(kM * kN));
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << "output " << i;
    blocks.run(g, act, y2.as<float>(), true);
    const std::vector<float> twice = to_host<float>(y2, static_cast<size_t>(kM * kN));
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(twice[i], a[i] + a[i]) << "output " << i;
  }
}

// Dequantization is a format: dequantize_f32 gives the CPU reference
// dequantizer's bits and dequantize_f16 those rounded to f16, for every
// quantized type, on the whole matrix and on a row slice (the stacked
// Q|K|V views).
TEST(GpuDequant, EveryTypeEqualsReferenceBits) {
  FERRITE_REQUIRE_GPU();
  constexpr int64_t kN = 13, kK = 768, kR0 = 5, kRows = 6;
  std::mt19937 rng = fresh_rng();
  for (TensorType t : all_quant_types()) {
    SCOPED_TRACE(tensor_type_name(t));
    const Quantized q = quantize(t, random_floats(static_cast<size_t>(kN * kK), rng), kN, kK);
    std::vector<float> ref(static_cast<size_t>(kN * kK));
    const quant::TypeTraits& tr = quant::type_traits(t);
    for (int64_t r = 0; r < kN; ++r) tr.to_float_ref(q.bytes.data() + r * q.row_bytes, ref.data() + r * kK, kK);
    DeviceBuffer wbuf;
    const GpuMatrix g = upload_matrix(t, kN, kK, q.bytes.data(), wbuf, "w");
    DeviceBuffer f32(static_cast<size_t>(kN * kK) * sizeof(float));
    DeviceBuffer f16(static_cast<size_t>(kN * kK) * sizeof(uint16_t));
    dequantize_f32(g, f32.as<float>(), nullptr);
    dequantize_f16(g, f16.as<uint16_t>(), nullptr);
    const std::vector<float> got32 = to_host<float>(f32, ref.size());
    const std::vector<uint16_t> got16 = to_host<uint16_t>(f16, ref.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_EQ(std::memcmp(&got32[i], &ref[i], sizeof(float)), 0) << "f32 element " << i << ": " << got32[i] << " vs "
                                                                    << ref[i];
      ASSERT_EQ(got16[i], fp32_to_fp16(ref[i])) << "f16 element " << i;
    }
    dequantize_f32(row_slice(g, kR0, kRows), f32.as<float>(), nullptr);
    const std::vector<float> part = to_host<float>(f32, static_cast<size_t>(kRows * kK));
    for (size_t i = 0; i < part.size(); ++i) {
      ASSERT_EQ(std::memcmp(&part[i], &ref[kR0 * kK + i], sizeof(float)), 0) << "slice element " << i;
    }
  }
}

// Shapes gemv_quant does not take are refused with an error, not run.
TEST(GpuGemvShapes, UnsupportedShapesThrow) {
  FERRITE_REQUIRE_GPU();
  const int64_t n = 8, k = 256;
  std::mt19937 rng = fresh_rng();
  const Quantized q = quantize(TensorType::Q4_K, random_floats(static_cast<size_t>(n * k), rng), n, k);
  DeviceBuffer wbuf;
  const GpuMatrix g = upload_matrix(TensorType::Q4_K, n, k, q.bytes.data(), wbuf, "w");
  EXPECT_TRUE(gemv_quant_supports(g, 1));
  EXPECT_FALSE(gemv_quant_supports(g, kGemvMaxRows + 1));
  EXPECT_FALSE(gemv_quant_supports(g, 0));
  DeviceBuffer yd = test::poisoned(static_cast<size_t>(n * (kGemvMaxRows + 1)));
  EXPECT_THROW(gemv_quant(g, QuantAct{}, kGemvMaxRows + 1, yd.as<float>(), false, false, nullptr), InvalidArgument);
  const GpuMatrix f16{TensorType::F16, n, 256, g.data, nullptr, 512};
  EXPECT_FALSE(gemv_quant_supports(f16, 1));
  // A Q4_K view whose data is not 16-byte aligned.
  GpuMatrix odd = g;
  odd.data += 8;
  EXPECT_FALSE(gemv_quant_supports(odd, 1));
}

// Shapes matmul_mma does not take are refused with an error, not run.
TEST(GpuMmaShapes, UnsupportedShapesThrow) {
  FERRITE_REQUIRE_GPU();
  const int64_t n = 8, k = 1120;  // k not a multiple of 256
  std::mt19937 rng = fresh_rng();
  const std::vector<float> w = random_floats(static_cast<size_t>(n * k), rng);
  const Quantized q = quantize(TensorType::Q8_0, w, n, k);
  DeviceBuffer wbuf, scratch;
  const GpuMatrix g = upload_matrix(TensorType::Q8_0, n, k, q.bytes.data(), wbuf, "w");
  EXPECT_FALSE(matmul_mma_supports(g));
  DeviceBuffer yd = test::poisoned(static_cast<size_t>(n));
  EXPECT_THROW(matmul_mma(g, QuantAct{}, 1, yd.as<float>(), false, scratch, nullptr), InvalidArgument);
  const GpuMatrix f16{TensorType::F16, n, 256, g.data, nullptr, 512};
  EXPECT_FALSE(matmul_mma_supports(f16));
}

// The 8-bit activation blocks the GPU forms dequantize to the CPU's round trip.
TEST(GpuActQuant, RoundTripMatchesCpu) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kM = 3, kK = 1024;
  std::vector<float> x = random_floats(static_cast<size_t>(kM * kK), rng, -3.0f, 3.0f);
  for (int64_t i = 0; i < 32; ++i) x[static_cast<size_t>(256 + i)] = 0.0f;  // an all-zero block
  x[7] = 4.0f;  // a tie of magnitudes: the first wins
  x[9] = -4.0f;
  DeviceBuffer xd = to_device(x);
  for (ActFormat f : {ActFormat::Q8_0, ActFormat::Q8_K, ActFormat::Q8_1}) {
    DeviceBuffer qs(static_cast<size_t>(kM * kK)), d(static_cast<size_t>(kM * kK / 32) * 4),
        sums(static_cast<size_t>(kM * kK / 32) * 4), sd(static_cast<size_t>(kM * kK / 32) * 4);
    QuantAct q{qs.as<int8_t>(), d.as<float>(), sums.as<int32_t>()};
    if (f == ActFormat::Q8_1) q.s = sd.as<float>();
    quantize_act(f, xd.as<float>(), kM, kK, q, nullptr);
    const auto hq = to_host<int8_t>(qs, static_cast<size_t>(kM * kK));
    const auto hd = to_host<float>(d, static_cast<size_t>(kM * kK / 32));
    const auto hs = to_host<int32_t>(sums, static_cast<size_t>(kM * kK / 32));
    std::vector<float> ref(x.size());
    cpu::act_quant_round_trip(f == ActFormat::Q8_K ? cpu::ActQuant::Q8_K : cpu::ActQuant::Q8_0, x.data(), ref.data(),
                              static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(hd[i / 32] * static_cast<float>(hq[i]), ref[i]) << "element " << i;
    }
    for (size_t b = 0; b < hs.size(); ++b) {
      int32_t s = 0;
      for (size_t j = 0; j < 32; ++j) s += hq[b * 32 + j];
      ASSERT_EQ(hs[b], s) << "block " << b;
    }
    if (f == ActFormat::Q8_1) {
      // s = f16(d * sum) as the CPU's Q8_1 blocks form it, with d = amax / 127
      // before its rounding and the sum of the 8-bit values (those the loop
      // above held to the CPU's round trip). Not the Q8_1 quantizer's own
      // sums: it scales by 1 / d, not 127 / amax, and a value near a rounding
      // boundary may round the other way there.
      const auto hsd = to_host<float>(sd, hs.size());
      for (size_t b = 0; b < hs.size(); ++b) {
        float amax = 0.0f;
        for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
        const float d = amax / 127.0f;
        ASSERT_EQ(hsd[b], fp16_to_fp32(fp32_to_fp16(d * static_cast<float>(hs[b])))) << "block " << b;
      }
    }
  }
}

}  // namespace
}  // namespace ferrite::cuda
