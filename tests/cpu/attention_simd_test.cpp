// The AVX2 and AVX-512 attention kernels against the generic path at their
// level (one dot_f16 per score and output element, itself tested against
// attention_ref): equal bit for bit on random inputs, over GQA ratios, head sizes, cache lengths that
// are not multiples of 16 or 64, causal masks, per-token ranges, soft-capping,
// token counts and thread counts.
#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "cpu/attention/attention.h"
#include "cpu/attention/attention_avx2.h"
#include "cpu/attention/attention_avx512.h"
#include "cpu/features.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Case {
  int64_t n_tokens, n_head, n_head_kv, head_dim, n_kv;
  float softcap = 0.0f;
  bool ranges = false;  // per-token kv_begin / kv_len
  int threads = 2;
  float max_alibi_bias = 0.0f;  // ALiBi: visible cells' mask holds the distance
  bool sinks = false;           // attention sinks (gpt-oss), one random logit per head
};

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// A kernel and the level whose generic path it reproduces.
struct Kernel {
  Isa isa;
  bool (*applies)(const AttentionArgs&);
  void (*run)(const AttentionArgs&, ThreadPool&, AttentionScratch&);
};

void PrintTo(const Kernel& k, std::ostream* os) { *os << isa_name(k.isa); }

// Sets a level for its lifetime.
class AtLevel {
 public:
  explicit AtLevel(Isa isa) : saved_(active_isa_cap()) { set_isa(isa); }
  ~AtLevel() { set_isa_cap(saved_); }
  AtLevel(const AtLevel&) = delete;
  AtLevel& operator=(const AtLevel&) = delete;

 private:
  IsaCap saved_;
};

class AttentionSimd : public ::testing::TestWithParam<Kernel> {
 protected:
  void SetUp() override {
    const Isa top = detected_isa();
    const bool have = GetParam().isa == Isa::Avx512 ? top == Isa::Avx512 : top == Isa::Avx2 || top == Isa::Avx512;
    if (!have) GTEST_SKIP() << "no " << isa_name(GetParam().isa) << " on this CPU";
  }
};

void check_case(const Case& c, uint32_t seed) {
  const Kernel& kernel = AttentionSimd::GetParam();
  const AtLevel level(kernel.isa);
  SCOPED_TRACE(::testing::Message() << "tokens " << c.n_tokens << " heads " << c.n_head << "/" << c.n_head_kv
                                    << " hd " << c.head_dim << " n_kv " << c.n_kv << " softcap " << c.softcap
                                    << " ranges " << c.ranges << " threads " << c.threads);
  const int64_t kv_stride = c.n_head_kv * c.head_dim;
  const auto q = test::random_floats(c.n_tokens * c.n_head * c.head_dim, seed, -2.0f, 2.0f);
  const auto k = test::to_f16(test::random_floats(c.n_kv * kv_stride, seed + 1, -2.0f, 2.0f));
  const auto vt = test::to_f16(test::random_floats(kv_stride * c.n_kv, seed + 2));
  std::vector<int32_t> begin(c.n_tokens), len(c.n_tokens);
  int64_t width = c.n_kv;
  if (c.ranges) {
    // Tokens in runs sharing a range, and runs of different ranges.
    width = 0;
    for (int64_t t = 0; t < c.n_tokens; ++t) {
      const int64_t run = t / 3;
      begin[t] = static_cast<int32_t>((run * 7) % (c.n_kv / 2 + 1));
      len[t] = static_cast<int32_t>(std::min<int64_t>(c.n_kv - begin[t], 1 + (run * 13 + 5) % c.n_kv));
      width = std::max<int64_t>(width, len[t]);
    }
  }
  std::vector<float> mask(c.n_tokens * width, -kInf);
  for (int64_t t = 0; t < c.n_tokens; ++t) {
    const int64_t n = c.ranges ? len[t] : c.n_kv;
    // Causal over the last n_tokens cells, plus a few holes.
    const int64_t last = n - c.n_tokens + t;
    for (int64_t j = 0; j < n; ++j) {
      const bool hole = (j * 5 + t) % 11 == 3;
      const float visible = c.max_alibi_bias > 0.0f ? -static_cast<float>(last - j) : 0.0f;
      mask[t * width + j] = (j <= last && !hole) ? visible : -kInf;
    }
  }
  AttentionArgs a;
  a.q = q.data();
  a.k = k.data();
  a.vt = vt.data();
  a.vt_stride = c.n_kv;
  a.kv_stride = kv_stride;
  a.n_kv = c.n_kv;
  a.mask = mask.data();
  if (c.ranges) {
    a.kv_begin = begin.data();
    a.kv_len = len.data();
    a.mask_stride = width;
  }
  a.n_tokens = c.n_tokens;
  a.n_head = c.n_head;
  a.n_head_kv = c.n_head_kv;
  a.head_dim = c.head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.softcap = c.softcap;
  a.max_alibi_bias = c.max_alibi_bias;
  const auto sinks = test::random_floats(c.n_head, seed + 3, -3.0f, 3.0f);
  if (c.sinks) a.sinks = sinks.data();
  ASSERT_TRUE(kernel.applies(a));
  std::vector<float> want(c.n_tokens * c.n_head * c.head_dim, 0.0f), got(want.size(), -1.0f);
  ThreadPool pool(c.threads);
  AttentionScratch scratch;
  a.out = want.data();
  attention_generic(a, pool, scratch);
  a.out = got.data();
  kernel.run(a, pool, scratch);
  int nonzero = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(bits(got[i]), bits(want[i])) << i << ": " << got[i] << " vs " << want[i];
    nonzero += want[i] != 0.0f;
  }
  EXPECT_GT(nonzero, 0);
}

TEST_P(AttentionSimd, GqaRatiosAndHeadSizes) {
  uint32_t seed = 100;
  for (int64_t group : {1, 4, 8}) {
    for (int64_t hd : {64, 80, 96, 128}) {
      for (int64_t n_kv : {16, 64, 77, 130}) {
        check_case({5, 2 * group, 2, hd, n_kv}, seed += 3);
      }
    }
  }
}

TEST_P(AttentionSimd, TokenCountsAndThreads) {
  uint32_t seed = 200;
  for (int64_t n_tokens : {1, 2, 7, 16, 37}) {
    for (int threads : {1, 2, 3}) {
      check_case({n_tokens, 8, 2, 64, 40 + n_tokens * 3, 0.0f, false, threads}, seed += 3);
    }
  }
  // A prefill of a whole cache: every tile of the upper triangle hidden.
  check_case({37, 4, 1, 64, 37}, seed += 3);
  check_case({32, 32, 4, 64, 32}, seed += 3);
  check_case({33, 16, 2, 128, 128}, seed += 3);
}

TEST_P(AttentionSimd, SoftcapAndTokenRanges) {
  uint32_t seed = 300;
  for (bool ranges : {false, true}) {
    for (float softcap : {0.0f, 5.0f}) {
      check_case({11, 8, 4, 64, 150, softcap, ranges, 2}, seed += 3);
      check_case({20, 4, 4, 80, 67, softcap, ranges, 3}, seed += 3);
    }
  }
}

// ALiBi slopes per head (power-of-two and other head counts, GQA groups
// spanning both slope series), with soft-capping and token ranges.
TEST_P(AttentionSimd, Alibi) {
  uint32_t seed = 400;
  check_case({9, 8, 8, 64, 70, 0.0f, false, 2, 8.0f}, seed += 3);
  check_case({5, 12, 4, 64, 130, 0.0f, false, 2, 8.0f}, seed += 3);
  check_case({17, 6, 1, 128, 77, 5.0f, false, 3, 8.0f}, seed += 3);
  check_case({11, 12, 3, 80, 150, 0.0f, true, 2, 8.0f}, seed += 3);
  check_case({3, 16, 2, 64, 40, 0.0f, false, 1, 16.0f}, seed += 3);
}

// Attention sinks (each head's logit in the softmax's maximum and
// denominator): GQA groups, token ranges (rows that see nothing: zeros).
TEST_P(AttentionSimd, Sinks) {
  uint32_t seed = 500;
  check_case({9, 8, 2, 64, 70, 0.0f, false, 2, 0.0f, true}, seed += 4);
  check_case({17, 6, 1, 128, 77, 5.0f, false, 3, 0.0f, true}, seed += 4);
  check_case({11, 12, 3, 80, 150, 0.0f, true, 2, 0.0f, true}, seed += 4);
  check_case({1, 4, 4, 64, 33, 0.0f, false, 1, 0.0f, true}, seed += 4);
}

// A token that sees no cell gets zeros, as the generic path gives.
TEST_P(AttentionSimd, FullyHiddenRowGivesZeros) {
  const AtLevel level(GetParam().isa);
  const int64_t hd = 16, n_kv = 20;
  const auto q = test::random_floats(2 * hd, 7);
  const auto k = test::to_f16(test::random_floats(n_kv * hd, 8));
  const auto vt = test::to_f16(test::random_floats(n_kv * hd, 9));
  std::vector<float> mask(2 * n_kv, -kInf);
  mask[n_kv + 3] = 0.0f;  // token 1 sees cell 3 only
  AttentionArgs a;
  a.q = q.data();
  a.k = k.data();
  a.vt = vt.data();
  a.vt_stride = n_kv;
  a.kv_stride = hd;
  a.n_kv = n_kv;
  a.mask = mask.data();
  a.n_tokens = 2;
  a.n_head = 1;
  a.n_head_kv = 1;
  a.head_dim = hd;
  std::vector<float> out(2 * hd, -1.0f);
  a.out = out.data();
  ThreadPool pool(2);
  AttentionScratch scratch;
  GetParam().run(a, pool, scratch);
  for (int64_t d = 0; d < hd; ++d) {
    EXPECT_EQ(bits(out[d]), 0u) << d;
    // One visible cell: p = 1 exactly, so the output is that V value.
    EXPECT_EQ(out[hd + d], fp16_to_fp32(vt[d * n_kv + 3])) << d;
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, AttentionSimd,
                         ::testing::Values(Kernel{Isa::Avx2, attention_avx2_applies, attention_avx2},
                                           Kernel{Isa::Avx512, attention_avx512_applies, attention_avx512}),
                         [](const auto& info) { return isa_name(info.param.isa); });

}  // namespace
}  // namespace ferrite::cpu
