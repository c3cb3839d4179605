// The threaded attention against the plain reference and a hand-checkable case.
#include <algorithm>
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/attention/alibi.h"
#include "cpu/attention/attention.h"
#include "cpu/features.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Attention, MatchesReferenceWithGqaAndMask) {
  const int64_t n_tokens = 5, n_head = 4, n_head_kv = 2, head_dim = 24, n_kv = 9;
  const auto q = test::random_floats(n_tokens * n_head * head_dim, 1);
  const auto k = test::to_f16(test::random_floats(n_kv * n_head_kv * head_dim, 2));
  const auto v = test::to_f16(test::random_floats(n_kv * n_head_kv * head_dim, 3));  // [n_head_kv*head_dim, n_kv]
  std::vector<float> mask(n_tokens * n_kv);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t j = 0; j < n_kv; ++j) mask[t * n_kv + j] = j <= t + 4 ? 0.0f : -kInf;  // causal
  }
  for (float softcap : {0.0f, 5.0f}) {
    AttentionArgs a;
    a.q = q.data();
    a.k = k.data();
    a.vt = v.data();
    a.vt_stride = n_kv;
    a.kv_stride = n_head_kv * head_dim;
    a.n_kv = n_kv;
    a.mask = mask.data();
    a.n_tokens = n_tokens;
    a.n_head = n_head;
    a.n_head_kv = n_head_kv;
    a.head_dim = head_dim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    a.softcap = softcap;
    std::vector<float> out(n_tokens * n_head * head_dim), out_ref(out.size());
    a.out = out_ref.data();
    attention_ref(a);
    const Isa saved = active_isa();
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
      set_isa(isa);
      ThreadPool pool(2);
      AttentionScratch scratch;
      a.out = out.data();
      attention(a, pool, scratch);
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], out_ref[i], 2e-5) << isa_name(isa) << " " << i;
    }
    set_isa(saved);
  }
}

// ALiBi slopes as published (Press et al.): 2^(-8 (h + 1) / n) for a power
// of two n; for 12 heads the 8 of n = 8, then the odd powers of the n = 16
// series' base 2^(-1/2): 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
TEST(Alibi, SlopesOfPowerOfTwoAndOtherHeadCounts) {
  for (int64_t h = 0; h < 8; ++h) EXPECT_FLOAT_EQ(alibi_slope(h, 8, 8.0f), std::ldexp(1.0f, -static_cast<int>(h + 1)));
  for (int64_t h = 0; h < 8; ++h) EXPECT_FLOAT_EQ(alibi_slope(h, 12, 8.0f), std::ldexp(1.0f, -static_cast<int>(h + 1)));
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(alibi_slope(8 + i, 12, 8.0f), std::pow(2.0f, -0.5f - static_cast<float>(i))) << i;
  }
  EXPECT_FLOAT_EQ(alibi_slope(3, 32, 8.0f), std::pow(2.0f, -1.0f));  // 2^(-8 * 4 / 32)
  EXPECT_EQ(alibi_slope(5, 12, 0.0f), 1.0f);                          // no ALiBi: the mask adds as it is
}

// ALiBi against a hand-made bias: head h with slope m over a distance mask
// equals the plain attention of that head with the bias m * mask added to
// its mask, at every level against the reference.
TEST(Attention, AlibiAddsSlopeTimesDistance) {
  const int64_t n_tokens = 4, n_head = 6, head_dim = 16, n_kv = 11;
  const auto q = test::random_floats(n_tokens * n_head * head_dim, 11);
  const auto k = test::to_f16(test::random_floats(n_kv * n_head * head_dim, 12));
  const auto v = test::to_f16(test::random_floats(n_kv * n_head * head_dim, 13));
  std::vector<float> dist(n_tokens * n_kv);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int64_t pos = n_kv - n_tokens + t;
    for (int64_t j = 0; j < n_kv; ++j) dist[t * n_kv + j] = j <= pos ? -static_cast<float>(pos - j) : -kInf;
  }
  AttentionArgs a;
  a.q = q.data();
  a.k = k.data();
  a.vt = v.data();
  a.vt_stride = n_kv;
  a.kv_stride = n_head * head_dim;
  a.n_kv = n_kv;
  a.mask = dist.data();
  a.n_tokens = n_tokens;
  a.n_head = n_head;
  a.n_head_kv = n_head;
  a.head_dim = head_dim;
  a.scale = 0.25f;
  a.max_alibi_bias = 8.0f;
  std::vector<float> out(n_tokens * n_head * head_dim), out_ref(out.size());
  a.out = out_ref.data();
  attention_ref(a);
  // Each head alone, its bias folded into the mask.
  double diff_plain = 0;
  for (int64_t h = 0; h < n_head; ++h) {
    const float m = alibi_slope(h, n_head, 8.0f);
    std::vector<float> biased(dist.size());
    for (size_t i = 0; i < dist.size(); ++i) biased[i] = dist[i] == -kInf ? -kInf : m * dist[i];
    AttentionArgs b = a;
    b.mask = biased.data();
    b.max_alibi_bias = 0.0f;
    std::vector<float> want(out.size());
    b.out = want.data();
    attention_ref(b);
    AttentionArgs c = b;
    std::vector<float> plain(out.size());
    for (size_t i = 0; i < dist.size(); ++i) biased[i] = dist[i] == -kInf ? -kInf : 0.0f;
    c.out = plain.data();
    attention_ref(c);
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t d = 0; d < head_dim; ++d) {
        const size_t i = static_cast<size_t>((t * n_head + h) * head_dim + d);
        ASSERT_NEAR(out_ref[i], want[i], 1e-6) << "head " << h;
        diff_plain = std::max(diff_plain, static_cast<double>(std::fabs(out_ref[i] - plain[i])));
      }
    }
  }
  EXPECT_GT(diff_plain, 1e-2);  // the bias matters
  const Isa saved = active_isa();
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    set_isa(isa);
    ThreadPool pool(2);
    AttentionScratch scratch;
    a.out = out.data();
    attention(a, pool, scratch);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], out_ref[i], 2e-5) << isa_name(isa) << " " << i;
  }
  set_isa(saved);
}

// One visible cell: the output is that cell's V row exactly.
TEST(Attention, SingleVisibleCellCopiesV) {
  const int64_t head_dim = 4;
  const std::vector<float> q = {1, 2, 3, 4};
  const auto k = test::to_f16({1, 0, 0, 0, 0, 1, 0, 0});
  // V transposed: row d holds cells 0 and 1.
  const auto v = test::to_f16({0.5f, 9, -1, 9, 2, 9, 4, 9});
  const std::vector<float> mask = {0.0f, -kInf};
  std::vector<float> out(head_dim);
  AttentionArgs a;
  a.q = q.data();
  a.k = k.data();
  a.vt = v.data();
  a.vt_stride = 2;
  a.kv_stride = head_dim;
  a.n_kv = 2;
  a.mask = mask.data();
  a.n_tokens = 1;
  a.n_head = 1;
  a.n_head_kv = 1;
  a.head_dim = head_dim;
  a.out = out.data();
  ThreadPool pool(1);
  AttentionScratch scratch;
  attention(a, pool, scratch);
  EXPECT_EQ(out, (std::vector<float>{0.5f, -1, 2, 4}));
}

// An attention sink (gpt-oss) joins the softmax's denominator only: one
// visible cell with score s and a sink z give p = 1 / (1 + exp(z - s)) times
// that V (p rounded to f16 as every probability), at every level; a sink of
// -infinity changes nothing; a row that sees no cell stays zeros.
TEST(Attention, SinkJoinsTheDenominator) {
  const int64_t head_dim = 4;
  const std::vector<float> q = {1, 2, 3, 4, 1, 2, 3, 4};  // two tokens
  const auto k = test::to_f16({1, 0, 0, 0, 0, 1, 0, 0});
  const auto v = test::to_f16({0.5f, 9, -1, 9, 2, 9, 4, 9});
  const std::vector<float> mask = {0.0f, -kInf, -kInf, -kInf};  // token 1 sees nothing
  const float sink = 0.25f, scale = 0.5f;
  const double p = 1.0 / (1.0 + std::exp(static_cast<double>(sink) - 1.0 * scale));  // s = q . k0 * scale
  const float p16 = fp16_to_fp32(fp32_to_fp16(static_cast<float>(p)));
  const Isa saved = active_isa();
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    set_isa(isa);
    for (float z : {sink, -kInf}) {
      std::vector<float> out(2 * head_dim, -1.0f);
      AttentionArgs a;
      a.q = q.data();
      a.k = k.data();
      a.vt = v.data();
      a.vt_stride = 2;
      a.kv_stride = head_dim;
      a.n_kv = 2;
      a.mask = mask.data();
      a.n_tokens = 2;
      a.n_head = 1;
      a.n_head_kv = 1;
      a.head_dim = head_dim;
      a.scale = scale;
      a.sinks = &z;
      a.out = out.data();
      ThreadPool pool(1);
      AttentionScratch scratch;
      attention(a, pool, scratch);
      const float f = std::isinf(z) ? 1.0f : p16;
      EXPECT_NEAR(out[0], 0.5f * f, 1e-6f) << isa_name(isa);
      EXPECT_NEAR(out[1], -1.0f * f, 1e-6f) << isa_name(isa);
      EXPECT_NEAR(out[2], 2.0f * f, 1e-6f) << isa_name(isa);
      EXPECT_NEAR(out[3], 4.0f * f, 1e-6f) << isa_name(isa);
      for (int64_t d = 0; d < head_dim; ++d) EXPECT_EQ(out[head_dim + d], 0.0f) << isa_name(isa);
      std::vector<float> ref(out.size());
      a.out = ref.data();
      attention_ref(a);
      for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], ref[i], 1e-6f) << "reference " << i;
    }
  }
  set_isa(saved);
}

// Per-token cell ranges (several sequences in one cache): each token reads
// only its range, with a mask row over that range. The result must equal
// full-width attention with the cells outside the range hidden (the hidden
// cells get weight exactly 0), for the reference and every fast path.
TEST(Attention, TokenRangesMatchFullMask) {
  const int64_t n_tokens = 4, n_head = 4, n_head_kv = 2, head_dim = 16, n_kv = 70;
  const auto q = test::random_floats(n_tokens * n_head * head_dim, 11);
  const auto k = test::to_f16(test::random_floats(n_kv * n_head_kv * head_dim, 12));
  const auto v = test::to_f16(test::random_floats(n_kv * n_head_kv * head_dim, 13));
  const std::vector<int32_t> begin = {0, 32, 5, 64};
  const std::vector<int32_t> len = {40, 38, 20, 6};
  const int64_t width = 40;
  std::vector<float> full(n_tokens * n_kv, -kInf), ranged(n_tokens * width, -kInf);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t j = 0; j < len[t]; ++j) {
      if ((j + t) % 3 == 2) continue;  // some hidden cells inside the range too
      full[t * n_kv + begin[t] + j] = 0.0f;
      ranged[t * width + j] = 0.0f;
    }
  }
  AttentionArgs a;
  a.q = q.data();
  a.k = k.data();
  a.vt = v.data();
  a.vt_stride = n_kv;
  a.kv_stride = n_head_kv * head_dim;
  a.n_kv = n_kv;
  a.n_tokens = n_tokens;
  a.n_head = n_head;
  a.n_head_kv = n_head_kv;
  a.head_dim = head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> want(n_tokens * n_head * head_dim), got_ref(want.size()), got(want.size());
  a.mask = full.data();
  a.out = want.data();
  attention_ref(a);
  a.mask = ranged.data();
  a.kv_begin = begin.data();
  a.kv_len = len.data();
  a.mask_stride = width;
  a.out = got_ref.data();
  attention_ref(a);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got_ref[i], want[i], 1e-6) << i;
  const Isa saved = active_isa();
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    set_isa(isa);
    ThreadPool pool(2);
    AttentionScratch scratch;
    a.out = got.data();
    attention(a, pool, scratch);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-5) << isa_name(isa) << " " << i;
  }
  set_isa(saved);
}

}  // namespace
}  // namespace ferrite::cpu
