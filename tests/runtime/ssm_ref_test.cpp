// mamba2 and granitehybrid on tiny random models against the
// double-precision references written from their published definitions
// (ref_mamba2.h, ref_granite_hybrid.h), through runtime::Context (which
// keeps each sequence's recurrent state): the whole prompt in one pass, in
// passes of a few tokens (the state carried between passes) and one token
// at a time; and, for each quirk of the definition, a check that the
// reference without it misses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "model/model.h"
#include "model/ref_granite_hybrid.h"
#include "model/ref_mamba2.h"
#include "runtime/context.h"

namespace ferrite {
namespace {

// f32 against double through a few layers of small products: ~1e-6; the
// hybrid's attention reads an f16 cache as the reference does (ref_common.h).
constexpr double kSsmTolerance = 1e-3;

std::vector<int32_t> prompt(int64_t n, int64_t n_vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((7 * i * i + 3 * i + 1) % n_vocab);
  return t;
}

template <class A, class B>
double max_abs_diff(const A& a, const B& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  }
  return worst;
}

// Every token's logits of `tokens` evaluated in passes of `chunk` tokens.
std::vector<float> eval_chunks(const std::filesystem::path& path, const std::vector<int32_t>& tokens, size_t chunk) {
  auto model = model::Model::load(path.string());
  runtime::Context ctx(model, {.n_ctx = 64, .n_batch = 64, .n_threads = 2});
  std::vector<float> all;
  for (size_t b = 0; b < tokens.size(); b += chunk) {
    const size_t e = std::min(tokens.size(), b + chunk);
    const std::span<const float> l = ctx.eval({tokens.data() + b, e - b}, 0, /*all_logits=*/true);
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
}

void check_passes(const std::filesystem::path& path, const std::vector<int32_t>& tokens, const test::ref::Rows& want) {
  for (size_t chunk : {tokens.size(), size_t{3}, size_t{1}}) {
    SCOPED_TRACE("passes of " + std::to_string(chunk));
    EXPECT_LT(max_abs_diff(eval_chunks(path, tokens, chunk), want), kSsmTolerance);
  }
}

TEST(RefMamba2, LogitsMatchReferenceInOnePassAndInPasses) {
  test::Mamba2Config c;  // 8 heads in 2 groups, d_state 8, kernel 4
  test::TinyMamba2 tiny(c);
  const std::vector<int32_t> tokens = prompt(13, c.n_vocab);
  const test::ref::Rows want = tiny.reference(tokens);
  check_passes(tiny.path(), tokens, want);

  // Each part of the definition matters: the reference without it gives other logits.
  for (bool test::SsmConfig::*q : {&test::SsmConfig::ref_d_skip, &test::SsmConfig::ref_gate,
                                   &test::SsmConfig::ref_grouped_norm, &test::SsmConfig::ref_group_of_head,
                                   &test::SsmConfig::ref_conv}) {
    tiny.config().ssm.*q = false;
    EXPECT_GT(max_abs_diff(tiny.reference(tokens), want), 20 * kSsmTolerance);
    tiny.config().ssm.*q = true;
  }
}

TEST(RefMamba2, UntiedOutputOneGroupMatchesReference) {
  test::Mamba2Config c;
  c.tied_output = false;
  c.ssm.n_group = 1;
  c.ssm.d_conv = 3;
  test::TinyMamba2 tiny(c, 31);
  const std::vector<int32_t> tokens = prompt(9, c.n_vocab);
  check_passes(tiny.path(), tokens, tiny.reference(tokens));
}

TEST(RefGraniteHybrid, MoeLayersMatchReferenceInOnePassAndInPasses) {
  test::GraniteHybridConfig c;  // mamba, attention, mamba; experts with a shared one
  test::TinyGraniteHybrid tiny(c);
  const std::vector<int32_t> tokens = prompt(12, c.n_vocab);
  const test::ref::Rows want = tiny.reference(tokens);
  check_passes(tiny.path(), tokens, want);
  for (bool test::GraniteHybridConfig::*q :
       {&test::GraniteHybridConfig::ref_embedding, &test::GraniteHybridConfig::ref_residual,
        &test::GraniteHybridConfig::ref_attention, &test::GraniteHybridConfig::ref_logit,
        &test::GraniteHybridConfig::ref_shared_expert, &test::GraniteHybridConfig::ref_no_rope}) {
    tiny.config().*q = false;
    EXPECT_GT(max_abs_diff(tiny.reference(tokens), want), 20 * kSsmTolerance);
    tiny.config().*q = true;
  }
}

TEST(RefGraniteHybrid, DenseLayersWithRopeMatchReference) {
  test::GraniteHybridConfig c;
  c.moe = false;
  c.rope = true;
  test::TinyGraniteHybrid tiny(c, 41);
  const std::vector<int32_t> tokens = prompt(10, c.n_vocab);
  check_passes(tiny.path(), tokens, tiny.reference(tokens));
}

}  // namespace
}  // namespace ferrite
