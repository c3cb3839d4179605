// Attention over a cache of rows (cpu/attention/attention_rows.h: the f32 and bf16 KV
// caches): every level's path (generic, AVX2, AVX-512, those the host runs)
// against the double-precision reference on fresh random inputs (a new seed
// per run, printed with any failure; FERRITE_TEST_SEED=N repeats it), over
// every pair of element types, GQA ratios, head sizes with and without a
// vector tail, cache lengths, causal masks, per-token ranges, soft-capping,
// ALiBi, sinks and T5's distance bias; and hand-checkable cases that show an
// f32 cache keeps the query, the probabilities and V unrounded.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/attention/attention.h"
#include "cpu/attention/attention_rows.h"
#include "cpu/features.h"

namespace ferrite::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

uint32_t run_seed() {
  static const uint32_t seed = [] {
    if (const char* env = std::getenv("FERRITE_TEST_SEED")) return static_cast<uint32_t>(std::strtoul(env, nullptr, 10));
    return std::random_device{}();
  }();
  return seed;
}

std::string seed_note() { return "seed " + std::to_string(run_seed()) + " (FERRITE_TEST_SEED reproduces)"; }

std::vector<Isa> levels() {
  std::vector<Isa> out{Isa::Scalar};
  const Isa top = detected_isa();
  if (top == Isa::Neon) out.push_back(Isa::Neon);
  if (top == Isa::Avx2 || top == Isa::Avx512) out.push_back(Isa::Avx2);
  if (top == Isa::Avx512) out.push_back(Isa::Avx512);
  return out;
}

class AtLevel {
 public:
  explicit AtLevel(Isa isa) : saved_(active_isa_cap()) { set_isa(isa); }
  ~AtLevel() { set_isa_cap(saved_); }
  AtLevel(const AtLevel&) = delete;
  AtLevel& operator=(const AtLevel&) = delete;

 private:
  IsaCap saved_;
};

const char* elem_name(KvElem e) { return e == KvElem::F32 ? "f32" : e == KvElem::BF16 ? "bf16" : "f16"; }

// Rows of n random values in [-1, 1) stored as element type e.
std::vector<uint8_t> random_rows(KvElem e, size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint8_t> out(n * (e == KvElem::F32 ? 4 : 2));
  for (size_t i = 0; i < n; ++i) {
    const float x = dist(rng);
    if (e == KvElem::F32) {
      std::memcpy(out.data() + 4 * i, &x, 4);
    } else {
      const uint16_t h = e == KvElem::BF16 ? fp32_to_bf16(x) : fp32_to_fp16(x);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

struct Case {
  int64_t n_tokens, n_head, n_head_kv, head_dim, n_kv;
  float softcap = 0.0f;
  bool ranges = false;
  float max_alibi_bias = 0.0f;
  bool sinks = false;
  bool dist_bias = false;
};

// Every level against the reference for one case and one pair of types.
void check(const Case& c, KvElem ke, KvElem ve, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t kv_stride = c.n_head_kv * c.head_dim;
  std::vector<float> q(static_cast<size_t>(c.n_tokens * c.n_head * c.head_dim));
  for (float& x : q) x = 2.0f * dist(rng);
  const auto k = random_rows(ke, static_cast<size_t>(c.n_kv * kv_stride), rng);
  const auto v = random_rows(ve, static_cast<size_t>(c.n_kv * kv_stride), rng);
  std::vector<float> mask(static_cast<size_t>(c.n_tokens * c.n_kv));
  std::vector<int32_t> begin(static_cast<size_t>(c.n_tokens)), len(static_cast<size_t>(c.n_tokens));
  for (int64_t t = 0; t < c.n_tokens; ++t) {
    // Token t sees cells up to n_kv - n_tokens + t (causal); with ranges,
    // only [b, b + l) from a random start.
    const int64_t last = c.n_kv - c.n_tokens + t;
    const int64_t b = c.ranges ? std::uniform_int_distribution<int64_t>(0, last)(rng) : 0;
    begin[static_cast<size_t>(t)] = static_cast<int32_t>(b);
    len[static_cast<size_t>(t)] = static_cast<int32_t>(c.ranges ? c.n_kv - b : c.n_kv);
    for (int64_t j = 0; j < c.n_kv; ++j) {
      const int64_t cell = c.ranges ? b + j : j;
      float m = cell <= last ? 0.0f : -kInf;
      if (m == 0.0f && (c.max_alibi_bias > 0.0f || c.dist_bias)) m = -static_cast<float>(last - cell);
      if (j < len[static_cast<size_t>(t)]) mask[static_cast<size_t>(t * c.n_kv + j)] = m;
    }
  }
  std::vector<float> sinks(static_cast<size_t>(c.n_head)), bias(static_cast<size_t>(c.n_head * 8));
  for (float& x : sinks) x = dist(rng);
  for (float& x : bias) x = dist(rng);
  AttentionArgs a;
  a.q = q.data();
  a.k_rows = k.data();
  a.v_rows = v.data();
  a.k_elem = ke;
  a.v_elem = ve;
  a.kv_stride = kv_stride;
  a.n_kv = c.n_kv;
  a.mask = mask.data();
  if (c.ranges) {
    a.kv_begin = begin.data();
    a.kv_len = len.data();
    a.mask_stride = c.n_kv;
  }
  a.n_tokens = c.n_tokens;
  a.n_head = c.n_head;
  a.n_head_kv = c.n_head_kv;
  a.head_dim = c.head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.softcap = c.softcap;
  a.max_alibi_bias = c.max_alibi_bias;
  if (c.sinks) a.sinks = sinks.data();
  if (c.dist_bias) {
    a.dist_bias = bias.data();
    a.n_dist = 8;
  }
  std::vector<float> want(q.size()), got(q.size());
  a.out = want.data();
  attention_rows_ref(a);
  // f32 sums of at most a few hundred terms of size <= 1 against double
  // ones; with V f16 / bf16 a probability can round to the neighbouring
  // value (one unit, 2^-10 / 2^-7 of it, at most), moving the output by up
  // to that fraction of sum_j p_j |V_j| <= 1.
  const double flip = ve == KvElem::F32 ? 0.0 : ve == KvElem::F16 ? 0x1p-10 : 0x1p-7;
  for (Isa isa : levels()) {
    const AtLevel at(isa);
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      AttentionScratch scratch;
      std::fill(got.begin(), got.end(), kInf);
      a.out = got.data();
      attention(a, pool, scratch);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 2e-5 + 2e-6 * std::fabs(want[i]) + flip)
            << isa_name(isa) << " K " << elem_name(ke) << " V " << elem_name(ve) << " threads " << threads
            << " element " << i << " head_dim " << c.head_dim << " n_kv " << c.n_kv;
      }
    }
  }
}

TEST(AttentionRows, EveryLevelMatchesReference) {
  SCOPED_TRACE(seed_note());
  std::mt19937 rng(run_seed());
  const Case cases[] = {
      {1, 4, 4, 64, 37},                                   // decode, no GQA
      {5, 8, 2, 128, 70, 0.0f, true},                      // prefill, GQA 4, per-token ranges
      {3, 6, 3, 24, 19, 5.0f},                             // soft-cap, head size with a tail of 8
      {4, 4, 1, 13, 33, 0.0f, false, 8.0f},                // ALiBi, odd head size
      {2, 4, 2, 80, 50, 0.0f, false, 0.0f, true},          // sinks
      {3, 2, 2, 40, 17, 0.0f, false, 0.0f, false, true},   // T5 distance bias
      {2, 16, 1, 576, 21},                                 // MLA-like rows (one KV head)
  };
  const KvElem elems[] = {KvElem::F32, KvElem::BF16, KvElem::F16};
  for (const Case& c : cases) {
    for (KvElem ke : elems) {
      for (KvElem ve : elems) check(c, ke, ve, rng);
    }
  }
}

// One visible cell: the output is that cell's V row, exactly as the cache
// holds it (an f32 value no f16 or bf16 represents comes out unchanged; the
// probability 1 is exact in every type).
TEST(AttentionRows, SingleVisibleCellCopiesVExactly) {
  const int64_t hd = 16, n_kv = 3;
  std::vector<float> q(hd, 0.3f), k(n_kv * hd, 0.1f), v(n_kv * hd);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1.0f + static_cast<float>(i) * 1e-6f;
  const std::vector<float> mask = {-kInf, 0.0f, -kInf};
  AttentionArgs a;
  a.q = q.data();
  a.k_rows = k.data();
  a.v_rows = v.data();
  a.k_elem = a.v_elem = KvElem::F32;
  a.kv_stride = hd;
  a.n_kv = n_kv;
  a.mask = mask.data();
  a.n_tokens = a.n_head = a.n_head_kv = 1;
  a.head_dim = hd;
  for (Isa isa : levels()) {
    const AtLevel at(isa);
    ThreadPool pool(1);
    AttentionScratch scratch;
    std::vector<float> out(hd);
    a.out = out.data();
    attention(a, pool, scratch);
    for (int64_t d = 0; d < hd; ++d) EXPECT_EQ(out[d], v[hd + d]) << isa_name(isa) << " " << d;
  }
}

// Two cells with f32 K and V: the result is the exact softmax mix in f32,
// not the f16 cache's (q and p rounded to f16). Scores q.k = 0.1234567 * 16
// x (1 or 0): p = sigmoid of the difference, computed here in double.
TEST(AttentionRows, F32CacheKeepsQueryAndProbabilities) {
  const int64_t hd = 16;
  std::vector<float> q(hd, 0.1234567f), k(2 * hd, 0.0f), v(2 * hd);
  for (int64_t d = 0; d < hd; ++d) {
    k[d] = 1.0f;
    v[d] = 1.0f;
    v[hd + d] = -1.0f;
  }
  const std::vector<float> mask = {0.0f, 0.0f};
  AttentionArgs a;
  a.q = q.data();
  a.k_rows = k.data();
  a.v_rows = v.data();
  a.k_elem = a.v_elem = KvElem::F32;
  a.kv_stride = hd;
  a.n_kv = 2;
  a.mask = mask.data();
  a.n_tokens = a.n_head = a.n_head_kv = 1;
  a.head_dim = hd;
  a.scale = 0.25f;
  const double s = 0.25 * 16 * static_cast<double>(0.1234567f);
  const double p0 = 1.0 / (1.0 + std::exp(-s));
  const double exact = p0 - (1.0 - p0);
  for (Isa isa : levels()) {
    const AtLevel at(isa);
    ThreadPool pool(1);
    AttentionScratch scratch;
    std::vector<float> out(hd);
    a.out = out.data();
    attention(a, pool, scratch);
    for (int64_t d = 0; d < hd; ++d) EXPECT_NEAR(out[d], exact, 1e-6) << isa_name(isa);
  }
  // The f16 rounding of q and p alone moves it by more than that.
  const double q16 = fp16_to_fp32(fp32_to_fp16(0.1234567f));
  const double p16 = fp16_to_fp32(fp32_to_fp16(static_cast<float>(1.0 / (1.0 + std::exp(-0.25 * 16 * q16)))));
  const double p16b = fp16_to_fp32(fp32_to_fp16(static_cast<float>(1.0 - 1.0 / (1.0 + std::exp(-0.25 * 16 * q16)))));
  EXPECT_GT(std::fabs((p16 - p16b) - exact), 1e-5);
}

}  // namespace
}  // namespace ferrite::cpu
