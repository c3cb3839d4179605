// rwkv6 and rwkv7 (model/arch_rwkv.cpp) on tiny random models
// (tests/model/tiny_rwkv.h) through runtime::Context, which keeps each
// sequence's token-shift rows and wkv matrices (runtime/recurrent_state.h):
//   - rwkv6 and rwkv6qwen2 against llama.cpp c392e50 (tests/model/golden/<arch>.p<N>.json,
//     golden_dump's top-20 logits and log-sum-exp of every position; the
//     prompt in one pass, in passes of 7 and token by token), 1e-3 as the
//     other tiny families' F32 goldens;
//   - rwkv7 (no peer engine here has it) and rwkv6 against the
//     double-precision references of tests/model/ref_rwkv.h, written from the
//     definitions, with a check that each part of the definition matters;
//   - several sequences in one batch, a copied and a saved sequence.
// Regenerating the goldens (llama.cpp built outside the repository):
//   build/tests/test_runtime --gtest_also_run_disabled_tests --gtest_filter='Rwkv.DISABLED_Write'
//       with FERRITE_TINY_OUT=DIR
//   golden_dump -m DIR/tiny-<arch>.gguf -i <tiny_family_prompt(N)> --no-bos > <arch>.p<N>.json
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/golden.h"
#include "model/model.h"
#include "model/ref_rwkv.h"
#include "model/tiny_rwkv.h"
#include "runtime/context.h"

namespace ferrite::rwkv_test {
namespace {

constexpr double kGoldenTolerance = 1e-3;
constexpr double kRefTolerance = 1e-3;

test::RwkvConfig config(int version) {
  test::RwkvConfig c;
  c.version = version;
  return c;
}

// Every token's logits evaluated in passes of `chunk` tokens.
std::vector<float> eval_chunks(const std::shared_ptr<const model::Model>& m, const std::vector<int32_t>& tokens,
                               size_t chunk) {
  runtime::Context ctx(m, {.n_ctx = 64, .n_batch = 64, .n_threads = 2});
  std::vector<float> all;
  for (size_t b = 0; b < tokens.size(); b += chunk) {
    const size_t e = std::min(tokens.size(), b + chunk);
    const std::span<const float> l = ctx.eval({tokens.data() + b, e - b}, 0, /*all_logits=*/true);
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
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

test::RwkvConfig qwen2_config() {
  test::RwkvConfig c = config(6);
  c.qwen2 = true;
  return c;
}

void check_golden(const test::RwkvConfig& c, const std::string& arch) {
  const auto tiny = test::make_tiny_rwkv(c);
  auto m = model::Model::load(tiny->path().string());
  ASSERT_EQ(m->hparams().arch, arch);
  for (int p : {1, 2}) {
    const test::Golden g = test::load_golden(std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden" /
                                             (arch + ".p" + std::to_string(p) + ".json"));
    ASSERT_EQ(g.tokens, test::tiny_family_prompt(p)) << "the golden was made for other tokens";
    const auto nv = static_cast<size_t>(m->hparams().n_vocab);
    for (size_t chunk : {g.tokens.size(), size_t{7}, size_t{1}}) {
      const std::vector<float> logits = eval_chunks(m, g.tokens, chunk);
      double worst = 0;
      for (size_t i = 0; i < g.tokens.size(); ++i) {
        worst = std::max(worst, test::max_logit_error({logits.data() + i * nv, nv}, g.positions[i]));
      }
      EXPECT_LE(worst, kGoldenTolerance) << arch << " p" << p << ", passes of " << chunk;
      std::printf("  %s p%d (passes of %zu): max |logit error| %.3g\n", arch.c_str(), p, chunk, worst);
    }
  }
}

TEST(Rwkv, Rwkv6MatchesLlamaCpp) { check_golden(config(6), "rwkv6"); }

// rwkv6qwen2: 2 key/value heads for 4 heads, biases on r, k, v.
TEST(Rwkv, Rwkv6Qwen2MatchesLlamaCpp) { check_golden(qwen2_config(), "rwkv6qwen2"); }

void check_reference(const test::RwkvConfig& c, const std::vector<test::ref::RwkvDrop>& quirks) {
  const auto tiny = test::make_tiny_rwkv(c);
  auto m = model::Model::load(tiny->path().string());
  const std::vector<int32_t> tokens = test::tiny_family_prompt(2);
  const test::ref::RefRwkv ref(*tiny, c);
  const test::ref::Rows want = ref.forward(tokens);
  for (size_t chunk : {tokens.size(), size_t{3}, size_t{1}}) {
    const double err = max_abs_diff(eval_chunks(m, tokens, chunk), want);
    EXPECT_LT(err, kRefTolerance) << "rwkv" << c.version << ", passes of " << chunk;
    std::printf("  rwkv%d against the reference (passes of %zu): max |logit error| %.3g\n", c.version, chunk, err);
  }
  for (test::ref::RwkvDrop q : quirks) {
    EXPECT_GT(max_abs_diff(ref.forward(tokens, q), want), 50 * kRefTolerance) << "quirk " << static_cast<int>(q);
  }
}

TEST(Rwkv, Rwkv7MatchesReference) {
  using D = test::ref::RwkvDrop;
  check_reference(config(7), {D::TokenShift, D::Bonus, D::GroupNorm, D::ValueResidual, D::Gate, D::Delta});
}

TEST(Rwkv, Rwkv7WithoutGateMatchesReference) {
  test::RwkvConfig c = config(7);
  c.gate_rank = 0;
  c.n_layer = 2;
  check_reference(c, {});
}

TEST(Rwkv, Rwkv6MatchesReference) {
  using D = test::ref::RwkvDrop;
  check_reference(config(6), {D::TokenShift, D::Bonus, D::GroupNorm});
}

std::vector<int32_t> tokens_of(int64_t n, int salt) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((5 * i * i + salt * i + salt) % 320);
  return t;
}

std::vector<float> alone(const std::shared_ptr<const model::Model>& m, const std::vector<int32_t>& t) {
  runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2});
  const std::span<const float> l = ctx.eval(t, 0, /*all_logits=*/true);
  return {l.begin(), l.end()};
}

// Two sequences interleaved in one batch, then one token each: every row as the sequence alone.
TEST(Rwkv, InterleavedSequencesMatchEachAlone) {
  for (int version : {6, 7, 8}) {  // 8: rwkv6qwen2
    const auto tiny = test::make_tiny_rwkv(version == 8 ? qwen2_config() : config(version));
    auto m = model::Model::load(tiny->path().string());
    const std::vector<int32_t> a = tokens_of(9, 3), b = tokens_of(7, 11);
    const std::vector<float> want_a = alone(m, a), want_b = alone(m, b);
    runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2, .n_seq_max = 2});
    runtime::Batch batch;
    for (size_t i = 0; i < 8; ++i) {
      batch.add(a[i], static_cast<int32_t>(i), 0, true);
      if (i < 6) batch.add(b[i], static_cast<int32_t>(i), 1, true);
    }
    ctx.decode(batch);
    const auto nv = static_cast<size_t>(ctx.n_vocab());
    int64_t row = 0;
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_LT(max_abs_diff(ctx.logits(row++), std::span<const float>(want_a.data() + i * nv, nv)), 1e-4)
          << m->hparams().arch << " a " << i;
      if (i < 6) {
        EXPECT_LT(max_abs_diff(ctx.logits(row++), std::span<const float>(want_b.data() + i * nv, nv)), 1e-4)
            << m->hparams().arch << " b " << i;
      }
    }
    batch.clear();
    batch.add(b[6], 6, 1, true);
    batch.add(a[8], 8, 0, true);
    ctx.decode(batch);
    EXPECT_LT(max_abs_diff(ctx.logits(0), std::span<const float>(want_b.data() + 6 * nv, nv)), 1e-4);
    EXPECT_LT(max_abs_diff(ctx.logits(1), std::span<const float>(want_a.data() + 8 * nv, nv)), 1e-4);
  }
}

// A copied sequence continues as its source; a saved one carries its state into another context.
TEST(Rwkv, CopiedAndSavedSequencesContinue) {
  const auto tiny = test::make_tiny_rwkv(config(7));
  auto m = model::Model::load(tiny->path().string());
  const std::vector<int32_t> t = tokens_of(9, 4);
  const std::vector<float> want = alone(m, t);
  const auto nv = static_cast<size_t>(m->hparams().n_vocab);
  {
    runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2, .n_seq_max = 2});
    ctx.eval({t.data(), 6}, 0);
    ctx.cache().copy_sequence(0, 1);
    ctx.eval({t.data() + 6, 1}, 0);  // the source moves on
    const std::span<const float> got = ctx.eval({t.data() + 6, 3}, 1, true);
    EXPECT_LT(max_abs_diff(got, std::span<const float>(want.data() + 6 * nv, 3 * nv)), 1e-4);
  }
  std::string bytes;
  {
    runtime::Context a(m, {.n_ctx = 64, .n_threads = 2});
    a.eval({t.data(), 6});
    bytes = a.save_sequence_bytes(0, {t.data(), 6});
  }
  runtime::Context b(m, {.n_ctx = 64, .n_threads = 2, .n_seq_max = 2});
  b.eval(tokens_of(5, 8), 0);
  EXPECT_EQ(b.load_sequence_bytes(1, bytes), std::vector<int32_t>(t.begin(), t.begin() + 6));
  const std::span<const float> got = b.eval({t.data() + 6, 3}, 1, true);
  EXPECT_LT(max_abs_diff(got, std::span<const float>(want.data() + 6 * nv, 3 * nv)), 1e-4);
}

// Files without the family's keys or with misshapen tensors are refused with a ModelError.
TEST(Rwkv, BadFilesAreRefused) {
  for (int version : {6, 7}) {
    test::RwkvConfig c = config(version);
    c.head_size = 24;  // does not divide 64
    const auto tiny = test::make_tiny_rwkv(c);
    EXPECT_THROW(model::Model::load(tiny->path().string()), ModelError) << version;
  }
  test::RwkvConfig q = qwen2_config();
  q.n_kv_head = 3;  // does not divide the 4 heads
  const auto tiny = test::make_tiny_rwkv(q);
  EXPECT_THROW(model::Model::load(tiny->path().string()), ModelError);
}

// Writes the rwkv6, rwkv7 and rwkv6qwen2 files into $FERRITE_TINY_OUT (for golden_dump).
TEST(Rwkv, DISABLED_Write) {
  const char* out = std::getenv("FERRITE_TINY_OUT");
  ASSERT_NE(out, nullptr) << "set FERRITE_TINY_OUT";
  for (int version : {6, 7, 8}) {
    const auto tiny = test::make_tiny_rwkv(version == 8 ? qwen2_config() : config(version));
    const std::string name = version == 8 ? "rwkv6qwen2" : "rwkv" + std::to_string(version);
    std::filesystem::copy_file(tiny->path(), std::filesystem::path(out) / ("tiny-" + name + ".gguf"),
                               std::filesystem::copy_options::overwrite_existing);
  }
  for (int p : {1, 2}) {
    std::string ids;
    for (int32_t t : test::tiny_family_prompt(p)) {
      if (!ids.empty()) ids += ',';
      ids += std::to_string(t);
    }
    std::printf("p%d: %s\n", p, ids.c_str());
  }
}

}  // namespace
}  // namespace ferrite::rwkv_test
