// T5's attention kernels (cuda/kernels/ops.h) against a plain double
// reference of their definitions, the same as their CPU twins compute
// (CpuBackend::encoder_attention with AttentionSpec::rel_bias,
// CpuBackend::cross_attention): attention_seq with the bidirectional
// relative position bias (cpu/attention/rel_pos_bias.h, distances past 128 included),
// and attention_cross over another set of rows, each query seeing its own
// sequence's rows only.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/attention/rel_pos_bias.h"
#include "cuda/kernels/ops.h"
#include "device_util.h"

namespace ferrite::cuda {
namespace {

using test::fresh_rng;
using test::random_floats;
using test::relative_error;
using test::to_device;
using test::to_host;

// out [n, heads * hd] = softmax(q k^T * scale + bias(t, h, u)) v over rows u with kseq[u] == qseq[t].
template <class Bias>
std::vector<float> reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                             const std::vector<int32_t>& qseq, const std::vector<int32_t>& kseq, int64_t heads,
                             int64_t hd, float scale, Bias bias) {
  const int64_t n = static_cast<int64_t>(qseq.size()), n_k = static_cast<int64_t>(kseq.size()), w = heads * hd;
  std::vector<float> out(static_cast<size_t>(n * w));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<double> p(static_cast<size_t>(n_k), 0.0);
      double m = -INFINITY, sum = 0;
      for (int64_t u = 0; u < n_k; ++u) {
        if (kseq[u] != qseq[t]) continue;
        double d = 0;
        for (int64_t i = 0; i < hd; ++i) d += static_cast<double>(q[t * w + h * hd + i]) * k[u * w + h * hd + i];
        p[u] = d * scale + bias(t, h, u);
        m = std::max(m, p[u]);
      }
      for (int64_t u = 0; u < n_k; ++u) sum += (p[u] = kseq[u] == qseq[t] ? std::exp(p[u] - m) : 0.0);
      for (int64_t i = 0; i < hd; ++i) {
        double acc = 0;
        for (int64_t u = 0; u < n_k; ++u) acc += p[u] / sum * v[u * w + h * hd + i];
        out[t * w + h * hd + i] = static_cast<float>(acc);
      }
    }
  }
  return out;
}

TEST(GpuT5Ops, EncoderAttentionWithRelativeBias) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kN = 12, kHeads = 3, kHd = 16, kW = kHeads * kHd, kBuckets = 32;
  const auto q = random_floats(kN * kW, rng, -1.0f, 1.0f);
  const auto k = random_floats(kN * kW, rng, -1.0f, 1.0f);
  const auto v = random_floats(kN * kW, rng);
  const auto rel_b = random_floats(kBuckets * kHeads, rng, -2.0f, 2.0f);  // [buckets, heads]
  const std::vector<int32_t> seq = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 1};
  // Far apart positions too: the buckets' log range and the clamp past 128.
  const std::vector<int32_t> pos = {0, 1, 2, 9, 40, 300, 0, 1, 20, 200, 7, 3};
  std::vector<float> table;
  cpu::rel_bias_table(rel_b.data(), kBuckets, kHeads, true, table);
  auto bias = [&](int64_t t, int64_t h, int64_t u) {
    return static_cast<double>(rel_b[cpu::rel_pos_bucket(pos[u] - pos[t], kBuckets, true) * kHeads + h]);
  };
  const auto ref = reference(q, k, v, seq, seq, kHeads, kHd, 1.0f, bias);
  DeviceBuffer qd = to_device(q), kd = to_device(k), vd = to_device(v), sd = to_device(seq), pd = to_device(pos),
               td = to_device(table), od = test::poisoned(ref.size());
  attention_seq(qd.as<float>(), kd.as<float>(), vd.as<float>(), sd.as<int32_t>(), pd.as<int32_t>(), 0.0f, kN, kHeads,
                kHd, 1.0f, od.as<float>(), nullptr, td.as<float>());
  EXPECT_LE(relative_error(to_host<float>(od, ref.size()), ref), 1e-5);
  // Without the bias the result differs (the test sees it).
  const auto plain = reference(q, k, v, seq, seq, kHeads, kHd, 1.0f, [](int64_t, int64_t, int64_t) { return 0.0; });
  EXPECT_GT(relative_error(plain, ref), 1e-2);
}

TEST(GpuT5Ops, CrossAttentionReadsItsSequence) {
  FERRITE_REQUIRE_GPU();
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kN = 5, kEnc = 9, kHeads = 2, kHd = 24, kW = kHeads * kHd;
  const auto q = random_floats(kN * kW, rng, -1.0f, 1.0f);
  const auto k = random_floats(kEnc * kW, rng, -1.0f, 1.0f);
  const auto v = random_floats(kEnc * kW, rng);
  const std::vector<int32_t> qseq = {1, 0, 1, 2, 0};
  const std::vector<int32_t> kseq = {0, 0, 0, 1, 1, 1, 1, 2, 2};
  const auto ref = reference(q, k, v, qseq, kseq, kHeads, kHd, 1.0f, [](int64_t, int64_t, int64_t) { return 0.0; });
  DeviceBuffer qd = to_device(q), kd = to_device(k), vd = to_device(v), sd = to_device(qseq), ksd = to_device(kseq),
               od = test::poisoned(ref.size());
  attention_cross(qd.as<float>(), kd.as<float>(), vd.as<float>(), sd.as<int32_t>(), ksd.as<int32_t>(), kN, kEnc,
                  kHeads, kHd, 1.0f, od.as<float>(), nullptr);
  EXPECT_LE(relative_error(to_host<float>(od, ref.size()), ref), 1e-5);
  EXPECT_THROW(attention_cross(qd.as<float>(), kd.as<float>(), vd.as<float>(), sd.as<int32_t>(), ksd.as<int32_t>(), kN,
                               5000, kHeads, kHd, 1.0f, od.as<float>(), nullptr),
               InvalidArgument);
}

}  // namespace
}  // namespace ferrite::cuda
