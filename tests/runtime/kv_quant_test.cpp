// Quantized KV cache rows (model/kv_quant.h) and attention over them.
//
// 1. Rows: quantized by kv_quantize_row, read back by the quant module's
//    plain reference dequantizer (an independent implementation of the block
//    layouts), every value is within the type's step bound (see row_bound).
// 2. Attention with a q4_0 K and V cache against the f16 cache, within a
//    bound computed from the quantization error. For one (token, head), with
//    K' = K + E_K and V' = V + E_V (E: what q4_0 changed), the scores move by
//    |ds_j| <= scale * sum_d |q_d| |E_K[j, d]| <= eps, so every probability
//    moves by a factor within [e^-2eps, e^2eps] (p'_j = p_j e^ds_j / sum p e^ds),
//    i.e. sum_j |p'_j - p_j| <= e^(2 eps) - 1. Then, per output element d,
//      |o'_d - o_d| <= (e^(2 eps) - 1) max_j |V'[j, d]| + max_j |E_V[j, d]|
//    plus the f16 rounding of the probabilities (both runs round p to f16:
//    2^-11 relative, twice) times max |V|.
#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/fp16.h"
#include "cpu/attention/attention.h"
#include "model/kv_quant.h"
#include "quant/type_traits.h"

namespace ferrite {
namespace {

constexpr int64_t kBlock = model::kKvQuantBlock;
constexpr double kF16Eps = 1.0 / 2048;  // f16 relative rounding (2^-11)

std::vector<float> random_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 9) - 4);  // blocks of very different size
    const float shift = (rng() % 4 == 0) ? 0.5f * scale : 0.0f;           // some one-sided blocks
    for (int64_t j = 0; j < kBlock; ++j) x[static_cast<size_t>(b * kBlock + j)] = scale * u(rng) + shift;
  }
  return x;
}

// Largest |error| a value of a block may get. Symmetric types (d = m / -o
// with m the value of largest magnitude, o = 8 / 16 / 128): half a step
// amax / o / 2, except that the value at +amax when m < 0 is clamped one
// step short (a full step amax / o); q8_0 has no clamp (o = 127.5 would map
// amax to 255 / 2: its d = amax / 127, half a step). Affine types: half a
// step (max - min) / qmax / 2. Plus the f16 rounding of d (and m) times the
// largest multiple of it.
double row_bound(TensorType t, const float* x) {
  double lo = x[0], hi = x[0], amax = 0;
  for (int64_t j = 0; j < kBlock; ++j) {
    lo = std::min<double>(lo, x[j]);
    hi = std::max<double>(hi, x[j]);
    amax = std::max<double>(amax, std::fabs(x[j]));
  }
  switch (t) {
    case TensorType::Q8_0: return amax / 127 / 2 + amax * kF16Eps;
    case TensorType::Q4_0: return amax / 8 + amax * kF16Eps;
    case TensorType::Q5_0: return amax / 16 + amax * kF16Eps;
    case TensorType::Q4_1: return (hi - lo) / 15 / 2 + (hi - lo + std::fabs(lo)) * kF16Eps;
    case TensorType::Q5_1: return (hi - lo) / 31 / 2 + (hi - lo + std::fabs(lo)) * kF16Eps;
    default: return 0;
  }
}

TEST(KvQuantRows, WithinStepBound) {
  const int64_t n = 8 * kBlock;
  for (TensorType t : {TensorType::Q8_0, TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1}) {
    ASSERT_TRUE(model::kv_quant_supported(t));
    std::vector<uint8_t> row(static_cast<size_t>(model::kv_quant_row_bytes(t, n)));
    std::vector<float> back(static_cast<size_t>(n));
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      const std::vector<float> x = random_row(n, seed);
      model::kv_quantize_row(t, x.data(), row.data(), n);
      quant::type_traits(t).to_float_ref(row.data(), back.data(), n);
      for (int64_t b = 0; b < n / kBlock; ++b) {
        const double bound = row_bound(t, x.data() + b * kBlock);
        for (int64_t j = b * kBlock; j < (b + 1) * kBlock; ++j) {
          ASSERT_LE(std::fabs(back[static_cast<size_t>(j)] - x[static_cast<size_t>(j)]), bound)
              << tensor_type_name(t) << " seed " << seed << " value " << j;
        }
      }
    }
  }
}

// iq4_nl has no simple per-value bound (a non-linear grid whose scale is
// fitted per block). Its 16 levels span -127..113 units of the scale with
// gaps of at most 24 units; with the scale near amax / 127 every value is
// within about one gap, so we check 25 units of amax / 127.
TEST(KvQuantRows, Iq4NlRoundTripsCloseAndF16ReadBackAgrees) {
  const int64_t n = 4 * kBlock;
  const TensorType t = TensorType::IQ4_NL;
  ASSERT_TRUE(model::kv_quant_supported(t));
  std::vector<uint8_t> row(static_cast<size_t>(model::kv_quant_row_bytes(t, n)));
  std::vector<float> back(static_cast<size_t>(n)), tmp(static_cast<size_t>(n));
  std::vector<uint16_t> h(static_cast<size_t>(2 * n));
  const std::vector<float> x = random_row(n, 7);
  model::kv_quantize_row(t, x.data(), row.data(), n);
  quant::type_traits(t).to_float_ref(row.data(), back.data(), n);
  for (int64_t b = 0; b < n / kBlock; ++b) {
    double amax = 0;
    for (int64_t j = b * kBlock; j < (b + 1) * kBlock; ++j) amax = std::max<double>(amax, std::fabs(x[j]));
    for (int64_t j = b * kBlock; j < (b + 1) * kBlock; ++j) {
      ASSERT_LE(std::fabs(back[static_cast<size_t>(j)] - x[static_cast<size_t>(j)]), amax * 25.0 / 127.0) << j;
    }
  }
  // The strided f16 read-back is the f32 read-back rounded.
  model::kv_row_to_f16(t, row.data(), n, h.data(), 2, tmp.data());
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(h[static_cast<size_t>(2 * i)], fp32_to_fp16(back[static_cast<size_t>(i)]));
}

TEST(KvQuantRows, UnsupportedTypesRefused) {
  EXPECT_FALSE(model::kv_quant_supported(TensorType::F16));
  EXPECT_FALSE(model::kv_quant_supported(TensorType::Q4_K));
  float x[kBlock] = {};
  uint8_t row[64] = {};
  EXPECT_THROW(model::kv_quantize_row(TensorType::Q4_K, x, row, kBlock), InvalidArgument);
}

TEST(KvQuantAttention, Q4_0WithinBoundOfF16Cache) {
  const int64_t n_tokens = 3, n_head = 4, n_head_kv = 2, head_dim = 64, n_kv = 96;
  const int64_t n_embd_kv = n_head_kv * head_dim;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto fill = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = u(rng);
    return v;
  };
  const std::vector<float> q = fill(n_tokens * n_head * head_dim);
  const std::vector<float> k = fill(n_kv * n_embd_kv), v = fill(n_kv * n_embd_kv);  // [n_kv, n_embd_kv]

  // The f16 cache, and the q4_0 cache read back as f16 (K rows; V transposed).
  const TensorType t = TensorType::Q4_0;
  std::vector<uint16_t> k16(k.size()), vt16(v.size()), kq(k.size()), vtq(v.size());
  std::vector<uint8_t> row(static_cast<size_t>(model::kv_quant_row_bytes(t, n_embd_kv)));
  std::vector<float> tmp(static_cast<size_t>(n_embd_kv));
  for (int64_t j = 0; j < n_kv; ++j) {
    for (int64_t d = 0; d < n_embd_kv; ++d) {
      k16[static_cast<size_t>(j * n_embd_kv + d)] = fp32_to_fp16(k[static_cast<size_t>(j * n_embd_kv + d)]);
      vt16[static_cast<size_t>(d * n_kv + j)] = fp32_to_fp16(v[static_cast<size_t>(j * n_embd_kv + d)]);
    }
    model::kv_quantize_row(t, k.data() + j * n_embd_kv, row.data(), n_embd_kv);
    model::kv_row_to_f16(t, row.data(), n_embd_kv, kq.data() + j * n_embd_kv, 1, tmp.data());
    model::kv_quantize_row(t, v.data() + j * n_embd_kv, row.data(), n_embd_kv);
    model::kv_row_to_f16(t, row.data(), n_embd_kv, vtq.data() + j, n_kv, tmp.data());
  }
  std::vector<float> mask(static_cast<size_t>(n_tokens * n_kv), 0.0f);
  for (int64_t tk = 0; tk < n_tokens; ++tk) {
    for (int64_t j = n_kv - n_tokens + tk + 1; j < n_kv; ++j) mask[static_cast<size_t>(tk * n_kv + j)] = -INFINITY;
  }
  cpu::AttentionArgs a;
  a.q = q.data();
  a.vt_stride = n_kv;
  a.kv_stride = n_embd_kv;
  a.n_kv = n_kv;
  a.mask = mask.data();
  a.n_tokens = n_tokens;
  a.n_head = n_head;
  a.n_head_kv = n_head_kv;
  a.head_dim = head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> ref(static_cast<size_t>(n_tokens * n_head * head_dim)), got(ref.size());
  cpu::ThreadPool pool(2);
  cpu::AttentionScratch scratch;
  a.k = k16.data();
  a.vt = vt16.data();
  a.out = ref.data();
  cpu::attention(a, pool, scratch);
  a.k = kq.data();
  a.vt = vtq.data();
  a.out = got.data();
  cpu::attention(a, pool, scratch);

  const auto f = [](uint16_t h) { return static_cast<double>(fp16_to_fp32(h)); };
  double worst_ratio = 0;
  for (int64_t tk = 0; tk < n_tokens; ++tk) {
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t g = h / (n_head / n_head_kv);
      const float* qh = q.data() + (tk * n_head + h) * head_dim;
      double eps = 0;
      for (int64_t j = 0; j < n_kv; ++j) {
        double ds = 0;
        for (int64_t d = 0; d < head_dim; ++d) {
          const size_t i = static_cast<size_t>(j * n_embd_kv + g * head_dim + d);
          ds += std::fabs(f(fp32_to_fp16(qh[d]))) * std::fabs(f(kq[i]) - f(k16[i]));
        }
        eps = std::max(eps, ds * a.scale);
      }
      for (int64_t d = 0; d < head_dim; ++d) {
        const int64_t r = g * head_dim + d;  // row of V transposed
        double v_max = 0, e_max = 0;
        for (int64_t j = 0; j < n_kv; ++j) {
          const size_t i = static_cast<size_t>(r * n_kv + j);
          v_max = std::max({v_max, std::fabs(f(vtq[i])), std::fabs(f(vt16[i]))});
          e_max = std::max(e_max, std::fabs(f(vtq[i]) - f(vt16[i])));
        }
        const double bound = std::expm1(2 * eps) * v_max + e_max + 2 * kF16Eps * v_max;
        const size_t o = static_cast<size_t>((tk * n_head + h) * head_dim + d);
        const double err = std::fabs(static_cast<double>(got[o]) - ref[o]);
        ASSERT_LE(err, bound) << "token " << tk << " head " << h << " dim " << d;
        worst_ratio = std::max(worst_ratio, err / bound);
      }
    }
  }
  EXPECT_GT(worst_ratio, 0.0) << "the q4_0 cache changed nothing";
  std::printf("  q4_0 attention: worst error / bound %.3f\n", worst_ratio);
}

}  // namespace
}  // namespace ferrite
