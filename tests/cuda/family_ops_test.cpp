// The kernels of the non-Llama families (kernels/family_ops.cu) against
// their CPU twins on fresh random inputs: LayerNorm (cpu/ops/norm.h), the f16
// table GELU (cpu/ops/gelu_f16.h: the same table, so the same bits), SiLU and the
// SwiGLU of a fused gate|up product (cpu/ops/activations.h), scaling,
// soft-capping (as the CPU backend writes it), column gathers, and the
// encoders' attention (the CPU backend's, cpu/backend/cpu_attention.cpp).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/ops/activations.h"
#include "cpu/backend/cpu_backend.h"
#include "cpu/ops/gelu_f16.h"
#include "cpu/ops/norm.h"
#include "cpu/ops/tanh_f32.h"
#include "cuda/kernels/ops.h"
#include "device_util.h"

namespace ferrite::cuda {
namespace {

using test::fresh_rng;
using test::random_floats;
using test::relative_error;
using test::to_device;
using test::to_host;

TEST(GpuFamilyOps, LayerNormWithAndWithoutWeights) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kRows = 9, kN = 777;
  const auto x = random_floats(kRows * kN, rng, -3.0f, 5.0f);
  const auto w = random_floats(kN, rng);
  const auto b = random_floats(kN, rng);
  for (bool weights : {true, false}) {
    std::vector<float> ref(x.size());
    cpu::layer_norm(x.data(), weights ? w.data() : nullptr, weights ? b.data() : nullptr, 1e-5f, kRows, kN, ref.data());
    DeviceBuffer xd = to_device(x), wd = to_device(w), bd = to_device(b), yd = test::poisoned(x.size());
    layer_norm(xd.as<float>(), weights ? wd.as<float>() : nullptr, weights ? bd.as<float>() : nullptr, 1e-5f, kRows,
               kN, yd.as<float>(), nullptr);
    EXPECT_LE(relative_error(to_host<float>(yd, x.size()), ref), 1e-6) << "weights " << weights;
  }
}

TEST(GpuFamilyOps, GeluF16IsTheCpuTable) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kN = 5000;
  auto gate = random_floats(kN, rng, -12.0f, 12.0f);  // both cut-offs (+-10) included
  gate[0] = -10.0f;
  gate[1] = 10.0f;
  const auto up = random_floats(kN, rng);
  std::vector<float> ref_glu(kN), ref_gelu = gate;
  cpu::geglu_f16(gate.data(), up.data(), kN, ref_glu.data());
  cpu::gelu_f16_inplace(ref_gelu.data(), kN);
  DeviceBuffer gd = to_device(gate), ud = to_device(up), yd = test::poisoned(kN), xd = to_device(gate);
  geglu_f16(gd.as<float>(), ud.as<float>(), kN, yd.as<float>(), nullptr);
  geglu_f16(xd.as<float>(), nullptr, kN, xd.as<float>(), nullptr);  // in place, no up
  EXPECT_EQ(to_host<float>(yd, kN), ref_glu);
  EXPECT_EQ(to_host<float>(xd, kN), ref_gelu);
}

TEST(GpuFamilyOps, SiluAndFusedSwiglu) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kRows = 3, kN = 200;  // a row of 200: the exp groups and the tail
  const auto x = random_floats(kRows * kN, rng, -6.0f, 6.0f);
  std::vector<float> ref = x;
  cpu::silu_inplace(ref.data(), kRows, kN);
  DeviceBuffer xd = to_device(x);
  silu(xd.as<float>(), kRows, kN, nullptr);
  EXPECT_LE(relative_error(to_host<float>(xd, x.size()), ref), 1e-6);

  const auto gu = random_floats(kRows * 2 * kN, rng, -6.0f, 6.0f);  // [rows, gate | up]
  std::vector<float> ref_glu(kRows * kN);
  for (int64_t r = 0; r < kRows; ++r) cpu::swiglu(gu.data() + r * 2 * kN, gu.data() + r * 2 * kN + kN, kN, ref_glu.data() + r * kN);
  DeviceBuffer gud = to_device(gu), yd = test::poisoned(ref_glu.size());
  swiglu_fused(gud.as<float>(), kRows, kN, yd.as<float>(), nullptr);
  EXPECT_LE(relative_error(to_host<float>(yd, ref_glu.size()), ref_glu), 1e-6);
}

TEST(GpuFamilyOps, ScaleSoftcapAndColumns) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kRows = 4, kCols = 50;
  const auto x = random_floats(kRows * kCols, rng, -80.0f, 80.0f);
  std::vector<float> scaled = x, capped = x;
  for (float& v : scaled) v *= 0.37f;
  cpu::softcap_f32(capped.data(), static_cast<int64_t>(capped.size()), 30.0f);
  DeviceBuffer sd = to_device(x), cd = to_device(x);
  scale(sd.as<float>(), 0.37f, kRows * kCols, nullptr);
  softcap(cd.as<float>(), 30.0f, kRows * kCols, nullptr);
  EXPECT_EQ(to_host<float>(sd, x.size()), scaled);
  EXPECT_EQ(to_host<float>(cd, x.size()), capped);
  // clamp: cpu::clamp_inplace's values.
  std::vector<float> clamped = x;
  cpu::clamp_inplace(clamped.data(), static_cast<int64_t>(clamped.size()), 6.5f);
  DeviceBuffer kd = to_device(x);
  clamp(kd.as<float>(), 6.5f, kRows * kCols, nullptr);
  EXPECT_EQ(to_host<float>(kd, x.size()), clamped);

  std::vector<float> cols(kRows * 7);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < 7; ++c) cols[r * 7 + c] = x[r * kCols + 11 + c];
  }
  DeviceBuffer xd = to_device(x), od = test::poisoned(cols.size());
  gather_columns(xd.as<float>(), kCols, 11, kRows, 7, od.as<float>(), nullptr);
  EXPECT_EQ(to_host<float>(od, cols.size()), cols);
}

// The device's tanh is the host's (cpu/ops/tanh_f32_impl.h), bit for bit, on a
// sample of the whole float line (soft-capping at 1 is tanh itself) and on
// every float of [-1, 1] around the branches of its expm1.
TEST(GpuFamilyOps, TanhIsTheCpuTanhOnTheFloatLine) {
  FERRITE_REQUIRE_GPU();
  std::vector<float> x;
  for (uint64_t u = 0; u <= 0xffffffffu; u += 4099) {
    const uint32_t b = static_cast<uint32_t>(u);
    float v;
    std::memcpy(&v, &b, sizeof v);
    x.push_back(v);
  }
  for (uint32_t b = 0x3e800000u; b < 0x3f900000u; b += 3) {  // 0.25 .. 1.125 and their negatives
    float v;
    std::memcpy(&v, &b, sizeof v);
    x.push_back(v);
    x.push_back(-v);
  }
  std::vector<float> want = x;
  for (float& v : want) v = cpu::tanh_f32(v);
  DeviceBuffer d = to_device(x);
  softcap(d.as<float>(), 1.0f, static_cast<int64_t>(x.size()), nullptr);
  const std::vector<float> got = to_host<float>(d, x.size());
  int64_t differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], sizeof a);
    std::memcpy(&b, &want[i], sizeof b);
    if (a != b && !(std::isnan(got[i]) && std::isnan(want[i]))) ++differ;
  }
  EXPECT_EQ(differ, 0) << "of " << x.size();
  EXPECT_GT(x.size(), 1000000u);
}

// The encoders' attention against a plain double reference of its
// definition: each token attends to every token of its own sequence; with
// ALiBi (max bias 8, 3 heads: slopes 2^-4, 2^-8 and 2^-2 by the definition of
// cpu/attention/alibi.h) head h adds -slope_h |pos_t - pos_u|.
TEST(GpuFamilyOps, AttentionWithinSequences) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kN = 11, kHeads = 3, kHd = 16, kW = kHeads * kHd;
  const auto q = random_floats(kN * kW, rng, -2.0f, 2.0f);
  const auto k = random_floats(kN * kW, rng, -2.0f, 2.0f);
  const auto v = random_floats(kN * kW, rng);
  const std::vector<int32_t> seq = {0, 0, 1, 1, 1, 0, 2, 2, 1, 0, 3};
  const std::vector<int32_t> pos = {0, 1, 0, 1, 2, 2, 0, 1, 3, 3, 0};
  const float scale = 0.25f;
  const double slopes[kHeads] = {std::pow(2.0, -4), std::pow(2.0, -8), std::pow(2.0, -2)};
  for (float max_bias : {0.0f, 8.0f}) {
    std::vector<float> ref(kN * kW);
    for (int64_t t = 0; t < kN; ++t) {
      for (int64_t h = 0; h < kHeads; ++h) {
        std::vector<double> p(kN, 0.0);
        double m = -INFINITY, sum = 0;
        for (int64_t u = 0; u < kN; ++u) {
          if (seq[u] != seq[t]) continue;
          double d = 0;
          for (int64_t i = 0; i < kHd; ++i) d += static_cast<double>(q[t * kW + h * kHd + i]) * k[u * kW + h * kHd + i];
          p[u] = d * scale - (max_bias > 0.0f ? slopes[h] * std::abs(pos[t] - pos[u]) : 0.0);
          m = std::max(m, p[u]);
        }
        for (int64_t u = 0; u < kN; ++u) sum += (p[u] = seq[u] == seq[t] ? std::exp(p[u] - m) : 0.0);
        for (int64_t i = 0; i < kHd; ++i) {
          double acc = 0;
          for (int64_t u = 0; u < kN; ++u) acc += p[u] / sum * v[u * kW + h * kHd + i];
          ref[t * kW + h * kHd + i] = static_cast<float>(acc);
        }
      }
    }
    DeviceBuffer qd = to_device(q), kd = to_device(k), vd = to_device(v), sd = to_device(seq), pd = to_device(pos),
                 od = test::poisoned(ref.size());
    attention_seq(qd.as<float>(), kd.as<float>(), vd.as<float>(), sd.as<int32_t>(), pd.as<int32_t>(), max_bias, kN,
                  kHeads, kHd, scale, od.as<float>(), nullptr);
    EXPECT_LE(relative_error(to_host<float>(od, ref.size()), ref), 1e-5) << "max bias " << max_bias;
    EXPECT_THROW(attention_seq(qd.as<float>(), kd.as<float>(), vd.as<float>(), sd.as<int32_t>(), pd.as<int32_t>(),
                               max_bias, 5000, kHeads, kHd, scale, od.as<float>(), nullptr),
                 InvalidArgument);
  }
}

}  // namespace
}  // namespace ferrite::cuda
