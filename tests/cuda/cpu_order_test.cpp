// The float paths of the GPU reproduce the CPU's AVX-512 kernels bit for bit
// (cuda/cpu_order.cuh): matrix products of F32 and F16 weights for lengths
// in both summation orders (multiples of 16, and others with a tail), and
// attention (head sizes in both orders, cache lengths with and without a
// tail). Float models only meet the goldens' tolerances when these agree.
// Needs an AVX-512 host (the order is that path's); skipped elsewhere.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/attention/attention.h"
#include "cpu/features.h"
#include "cpu/matmul.h"
#include "cpu/thread_pool.h"
#include "cpu/vec_ops.h"
#include "cuda/backend/linear.h"
#include "cuda/kernels/ops.h"
#include "device_util.h"
#include "quant/type_traits.h"

namespace ferrite::cuda {
namespace {

using test::fresh_rng;
using test::random_floats;
using test::to_device;
using test::to_host;

#define FERRITE_REQUIRE_AVX512()                                                                    \
  do {                                                                                              \
    if (cpu::detected_isa() < cpu::Isa::Avx512) GTEST_SKIP() << "the CPU order needs AVX-512 here"; \
  } while (0)

// Every element equal as bits (NaN never expected).
void expect_same_bits(const std::vector<float>& gpu, const std::vector<float>& cpu_v, const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu_v.size());
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    if (gpu[i] != cpu_v[i] || std::isnan(gpu[i])) {
      if (differ++ == 0) first = i;
    }
  }
  EXPECT_EQ(differ, 0u) << what << ": first at " << first << ": gpu " << gpu[first] << " cpu " << cpu_v[first];
}

TEST(GpuCpuOrder, FloatMatmulBitsEqualCpu) {
  FERRITE_REQUIRE_GPU();
  FERRITE_REQUIRE_AVX512();
  const test::ProductMode exact(true);  // the CPU-order kernels, not the fast ones
  const cpu::VecOps& ops = cpu::vec_ops_for(cpu::Isa::Avx512);
  std::mt19937 rng = fresh_rng();
  constexpr int64_t kRows = 37;
  for (TensorType type : {TensorType::F32, TensorType::F16}) {
    // 64, 256: tiled order; 40, 100, 172, 200: the unrolled order with tails of each kind.
    for (int64_t k : {64, 256, 40, 100, 172, 200}) {
      for (int64_t m : {1, 3, 9}) {
        const std::vector<float> w = random_floats(static_cast<size_t>(kRows * k), rng);
        const std::vector<float> x = random_floats(static_cast<size_t>(m * k), rng, -2.0f, 2.0f);
        std::vector<float> ref(static_cast<size_t>(m * kRows));
        std::vector<uint8_t> bytes;
        if (type == TensorType::F32) {
          const auto* wb = reinterpret_cast<const uint8_t*>(w.data());
          bytes.assign(wb, wb + w.size() * sizeof(float));
          for (int64_t t = 0; t < m; ++t) {
            for (int64_t r = 0; r < kRows; ++r) {
              ref[t * kRows + r] = ops.dot_f32(w.data() + r * k, x.data() + t * k, k);
            }
          }
        } else {
          std::vector<uint16_t> wh(w.size()), xh(x.size());
          ops.f32_to_f16(w.data(), wh.data(), static_cast<int64_t>(w.size()));
          ops.f32_to_f16(x.data(), xh.data(), static_cast<int64_t>(x.size()));
          const auto* wb = reinterpret_cast<const uint8_t*>(wh.data());
          bytes.assign(wb, wb + wh.size() * sizeof(uint16_t));
          for (int64_t t = 0; t < m; ++t) {
            for (int64_t r = 0; r < kRows; ++r) {
              ref[t * kRows + r] = ops.dot_f16(wh.data() + r * k, xh.data() + t * k, k);
            }
          }
        }
        DeviceBuffer wbuf;
        const GpuMatrix g = upload_matrix(type, kRows, k, bytes.data(), wbuf, "w");
        DeviceBuffer xd = to_device(x), yd = test::poisoned(ref.size());
        Activation act;
        act.set(xd.as<float>(), m, k);
        LinearRunner lin(nullptr);
        lin.run(g, act, yd.as<float>());
        expect_same_bits(to_host<float>(yd, ref.size()), ref,
                         tensor_type_name(type) + " k=" + std::to_string(k) + " m=" + std::to_string(m));
      }
    }
  }
}

// Q4_1, Q5_0 and Q5_1 in the exact mode: the CPU's integer dot per block
// (cpu/dot/quant_dot_legacy_ref.cpp: (d_w d_a) sum(q a) (+ m_w s_a), Q8_1
// activations for Q4_1/Q5_1), the blocks summed in another order. With one
// or two blocks per row no order differs: the same bits; longer rows within
// 1e-6 of sum |w x| (float sums of up to 35 terms).
TEST(GpuCpuOrder, LegacyIntegerProductsEqualCpu) {
  FERRITE_REQUIRE_GPU();
  const test::ProductMode exact(true);
  std::mt19937 rng = fresh_rng();
  cpu::ThreadPool pool(1);
  cpu::MatmulScratch scratch;
  constexpr int64_t kRows = 37;
  for (TensorType type : {TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1}) {
    for (int64_t k : {32, 64, 256, 1120}) {
      for (int64_t m : {1, 3, 9}) {
        const std::vector<float> w = random_floats(static_cast<size_t>(kRows * k), rng);
        const std::vector<float> x = random_floats(static_cast<size_t>(m * k), rng, -2.0f, 2.0f);
        const uint64_t rb = tensor_row_bytes(type, static_cast<uint64_t>(k));
        const std::vector<uint8_t> bytes = test::quantize_rows(type, w, kRows, k);
        std::vector<float> ref(static_cast<size_t>(m * kRows));
        cpu::matmul(cpu::MatView{type, bytes.data(), k, kRows, rb}, x.data(), m, ref.data(), pool, scratch);
        DeviceBuffer wbuf;
        const GpuMatrix g = upload_matrix(type, kRows, k, bytes.data(), wbuf, "w");
        DeviceBuffer xd = to_device(x), yd = test::poisoned(ref.size());
        Activation act;
        act.set(xd.as<float>(), m, k);
        LinearRunner lin(nullptr);
        lin.run(g, act, yd.as<float>());
        const std::vector<float> got = to_host<float>(yd, ref.size());
        const std::string what = tensor_type_name(type) + " k=" + std::to_string(k) + " m=" + std::to_string(m);
        if (k <= 64) {
          expect_same_bits(got, ref, what);
          continue;
        }
        for (int64_t t = 0; t < m; ++t) {
          for (int64_t r = 0; r < kRows; ++r) {
            double scale = 0.0;
            for (int64_t j = 0; j < k; ++j) scale += std::fabs(static_cast<double>(w[r * k + j]) * x[t * k + j]);
            const size_t i = static_cast<size_t>(t * kRows + r);
            ASSERT_LE(std::fabs(static_cast<double>(got[i]) - ref[i]), 1e-6 * scale) << what << " row " << r;
          }
        }
      }
    }
  }
}

void check_attention_bits(int64_t n_tokens, int64_t n_kv, int64_t head_dim, std::mt19937& rng) {
  constexpr int64_t kHeads = 4, kHeadsKv = 2;
  const int64_t kv_w = kHeadsKv * head_dim;
  const auto q = random_floats(static_cast<size_t>(n_tokens * kHeads * head_dim), rng, -2.0f, 2.0f);
  const auto kf = random_floats(static_cast<size_t>(n_kv * kv_w), rng, -2.0f, 2.0f);
  const auto vf = random_floats(static_cast<size_t>(n_kv * kv_w), rng);
  std::vector<uint16_t> k(kf.size()), v(vf.size()), vt(vf.size());
  for (size_t i = 0; i < kf.size(); ++i) k[i] = fp32_to_fp16(kf[i]);
  for (int64_t j = 0; j < n_kv; ++j) {
    for (int64_t d = 0; d < kv_w; ++d) {
      v[j * kv_w + d] = fp32_to_fp16(vf[j * kv_w + d]);
      vt[d * n_kv + j] = v[j * kv_w + d];
    }
  }
  // Causal over the last n_tokens cells; cell 1 hidden from everyone (a hole).
  std::vector<float> mask(static_cast<size_t>(n_tokens * n_kv), -std::numeric_limits<float>::infinity());
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t j = 0; j <= n_kv - n_tokens + t; ++j) mask[t * n_kv + j] = j == 1 ? mask[t * n_kv + j] : 0.0f;
  }
  std::vector<float> ref(q.size());
  cpu::AttentionArgs a;
  a.q = q.data();
  a.k = k.data();
  a.vt = vt.data();
  a.vt_stride = n_kv;
  a.kv_stride = kv_w;
  a.n_kv = n_kv;
  a.mask = mask.data();
  a.n_tokens = n_tokens;
  a.n_head = kHeads;
  a.n_head_kv = kHeadsKv;
  a.head_dim = head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  a.out = ref.data();
  cpu::ThreadPool pool(1);
  cpu::AttentionScratch scratch;
  const cpu::Isa before = cpu::active_isa();
  cpu::set_isa(cpu::Isa::Avx512);
  cpu::attention(a, pool, scratch);
  cpu::set_isa(before);

  DeviceBuffer qd = to_device(q), kd = to_device(k), vd = to_device(v), md = to_device(mask),
               od = test::poisoned(q.size());
  AttentionParams p;
  p.q = qd.as<float>();
  p.k = kd.as<uint16_t>();
  p.v = vd.as<uint16_t>();
  p.mask = md.as<float>();
  p.n_kv = n_kv;
  p.n_tokens = n_tokens;
  p.n_head = kHeads;
  p.n_head_kv = kHeadsKv;
  p.head_dim = head_dim;
  p.scale = a.scale;
  p.out = od.as<float>();
  attention(p, nullptr);
  expect_same_bits(to_host<float>(od, q.size()), ref,
                   "n_kv=" + std::to_string(n_kv) + " head_dim=" + std::to_string(head_dim));
}

TEST(GpuCpuOrder, AttentionBitsEqualCpu) {
  FERRITE_REQUIRE_GPU();
  const test::ProductMode exact(true);
  FERRITE_REQUIRE_AVX512();
  std::mt19937 rng = fresh_rng();
  for (int64_t head_dim : {64, 128, 8, 72}) {
    for (int64_t n_kv : {32, 96, 100, 301}) check_attention_bits(5, n_kv, head_dim, rng);
    check_attention_bits(1, 1024, head_dim, rng);
  }
}

}  // namespace
}  // namespace ferrite::cuda
