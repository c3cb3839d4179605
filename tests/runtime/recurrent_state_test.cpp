// The recurrent state the runtime keeps beside the KV cache for models with
// SSM layers (runtime/recurrent_state.h, kv_cache_recurrent.cpp), on tiny
// random mamba2 and granitehybrid models (tests/model/ref_*.h): several
// sequences interleaved in one batch each scan with their own state; removals
// that would split a state are refused and leave it as it was; whole
// removals, copies and clears reset or duplicate it; a sequence continues
// only at its next position; a saved sequence carries its state.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/model.h"
#include "model/ref_granite_hybrid.h"
#include "model/ref_mamba2.h"
#include "runtime/context.h"

namespace ferrite {
namespace {

std::vector<int32_t> tokens_of(int64_t n, int64_t n_vocab, int salt) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = static_cast<int32_t>((5 * i * i + salt * i + salt) % n_vocab);
  return t;
}

double max_abs_diff(std::span<const float> a, std::span<const float> b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

std::vector<float> copy_of(std::span<const float> s) { return {s.begin(), s.end()}; }

// The logits of every token of `t` evaluated alone in a fresh context.
std::vector<float> alone(const std::shared_ptr<const model::Model>& m, const std::vector<int32_t>& t) {
  runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2});
  return copy_of(ctx.eval(t, 0, /*all_logits=*/true));
}

// Two sequences interleaved token by token in one batch, then a second batch
// of one token each: every row's logits equal those of the sequence alone.
void check_interleaved(const std::filesystem::path& path, int64_t n_vocab) {
  auto m = model::Model::load(path.string());
  const std::vector<int32_t> a = tokens_of(9, n_vocab, 3), b = tokens_of(7, n_vocab, 11);
  const std::vector<float> want_a = alone(m, a), want_b = alone(m, b);
  runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2, .n_seq_max = 2});
  runtime::Batch batch;
  // First 8 of a and 6 of b, interleaved; then the last token of each.
  for (size_t i = 0; i < 8; ++i) {
    batch.add(a[i], static_cast<int32_t>(i), 0, true);
    if (i < 6) batch.add(b[i], static_cast<int32_t>(i), 1, true);
  }
  ctx.decode(batch);
  const int64_t nv = ctx.n_vocab();
  int64_t row = 0;
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_LT(max_abs_diff(ctx.logits(row++), {want_a.data() + i * nv, static_cast<size_t>(nv)}), 1e-4) << "a " << i;
    if (i < 6) {
      EXPECT_LT(max_abs_diff(ctx.logits(row++), {want_b.data() + i * nv, static_cast<size_t>(nv)}), 1e-4) << "b " << i;
    }
  }
  batch.clear();
  batch.add(b[6], 6, 1, true);
  batch.add(a[8], 8, 0, true);
  ctx.decode(batch);
  EXPECT_LT(max_abs_diff(ctx.logits(0), {want_b.data() + 6 * nv, static_cast<size_t>(nv)}), 1e-4);
  EXPECT_LT(max_abs_diff(ctx.logits(1), {want_a.data() + 8 * nv, static_cast<size_t>(nv)}), 1e-4);
}

TEST(RecurrentState, InterleavedSequencesMatchEachAloneMamba2) {
  test::TinyMamba2 tiny(test::Mamba2Config{});
  check_interleaved(tiny.path(), tiny.config().n_vocab);
}

TEST(RecurrentState, InterleavedSequencesMatchEachAloneGraniteHybrid) {
  test::TinyGraniteHybrid tiny(test::GraniteHybridConfig{});
  check_interleaved(tiny.path(), tiny.config().n_vocab);
}

TEST(RecurrentState, PartialRemovalIsRefusedAndChangesNothing) {
  test::TinyGraniteHybrid tiny(test::GraniteHybridConfig{});
  auto m = model::Model::load(tiny.path().string());
  const std::vector<int32_t> t = tokens_of(10, tiny.config().n_vocab, 5);
  const std::vector<float> want = alone(m, t);
  const int64_t nv = m->hparams().n_vocab;
  runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2});
  ctx.eval({t.data(), 8});
  EXPECT_THROW(ctx.remove_range(0, 5, -1), InvalidArgument);
  EXPECT_THROW(ctx.remove_range(0, 2, 4), InvalidArgument);
  EXPECT_THROW(ctx.remove_range(-1, 3, -1), InvalidArgument);
  EXPECT_FALSE(ctx.cache().can_continue(0, 5));
  EXPECT_TRUE(ctx.cache().can_continue(0, 8));
  EXPECT_EQ(ctx.cache().max_pos(0), 7);
  // Nothing moved: the sequence continues as if never asked.
  const std::vector<float> got = copy_of(ctx.eval({t.data() + 8, 2}, 0, true));
  EXPECT_LT(max_abs_diff(got, {want.data() + 8 * nv, static_cast<size_t>(2 * nv)}), 1e-4);
  // A removal past the end holds nothing of the state: allowed.
  EXPECT_NO_THROW(ctx.remove_range(0, 10, -1));
  // Context shift would split the state too.
  EXPECT_THROW(ctx.shift_sequence(0, 2, -1, -2), InvalidArgument);
}

TEST(RecurrentState, WholeRemovalResetsTheState) {
  test::TinyMamba2 tiny(test::Mamba2Config{});
  auto m = model::Model::load(tiny.path().string());
  const std::vector<int32_t> t = tokens_of(6, tiny.config().n_vocab, 7);
  const std::vector<float> want = alone(m, t);
  runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2});
  ctx.eval(tokens_of(5, tiny.config().n_vocab, 2));
  ctx.remove_range(0, 0, -1);
  EXPECT_LT(max_abs_diff(ctx.eval(t, 0, true), want), 1e-5);
  ctx.clear();
  EXPECT_LT(max_abs_diff(ctx.eval(t, 0, true), want), 1e-5);
}

TEST(RecurrentState, OutOfOrderPositionsAndTooManySequencesAreRefused) {
  test::TinyMamba2 tiny(test::Mamba2Config{});
  auto m = model::Model::load(tiny.path().string());
  runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2});
  ctx.eval(tokens_of(4, tiny.config().n_vocab, 2));
  runtime::Batch b;
  b.add(1, 6, 0, true);  // skips position 4
  EXPECT_THROW(ctx.decode(b), InvalidArgument);
  b.clear();
  b.add(1, 2, 0, true);  // goes back
  EXPECT_THROW(ctx.decode(b), InvalidArgument);
  b.clear();
  b.add(1, 0, 1, true);  // a second sequence with one state slot
  EXPECT_THROW(ctx.decode(b), InvalidArgument);
  EXPECT_EQ(ctx.cache().max_pos(0), 3);
  EXPECT_EQ(ctx.cache().max_pos(1), -1);
}

TEST(RecurrentState, CopiedSequenceContinuesAsTheSource) {
  test::TinyGraniteHybrid tiny(test::GraniteHybridConfig{});
  auto m = model::Model::load(tiny.path().string());
  const std::vector<int32_t> t = tokens_of(8, tiny.config().n_vocab, 9);
  const std::vector<float> want = alone(m, t);
  const int64_t nv = m->hparams().n_vocab;
  for (bool own_cells : {false, true}) {
    runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2, .n_seq_max = 2});
    ctx.eval({t.data(), 6}, 0);
    if (own_cells) {
      EXPECT_THROW(ctx.copy_range(0, 1, 0, 3), InvalidArgument);  // part of the sequence
      EXPECT_EQ(ctx.copy_range(0, 1, 0, 6), 6);
    } else {
      ctx.cache().copy_sequence(0, 1);
    }
    // Sequence 0 moves on; sequence 1 continues from the copied state.
    ctx.eval({t.data() + 6, 1}, 0);
    const std::vector<float> got = copy_of(ctx.eval({t.data() + 6, 2}, 1, true));
    EXPECT_LT(max_abs_diff(got, {want.data() + 6 * nv, static_cast<size_t>(2 * nv)}), 1e-4) << own_cells;
  }
}

// A saved sequence (context_state.h version 3) holds its state: loaded into
// another context beside a sequence of its own, it continues as the original.
TEST(RecurrentState, SavedSequenceCarriesItsState) {
  test::TinyGraniteHybrid tiny(test::GraniteHybridConfig{});
  auto m = model::Model::load(tiny.path().string());
  const std::vector<int32_t> t = tokens_of(9, tiny.config().n_vocab, 4);
  const std::vector<float> want = alone(m, t);
  const int64_t nv = m->hparams().n_vocab;
  std::string bytes;
  {
    runtime::Context a(m, {.n_ctx = 64, .n_threads = 2});
    a.eval({t.data(), 6});
    bytes = a.save_sequence_bytes(0, {t.data(), 6});
  }
  runtime::Context b(m, {.n_ctx = 64, .n_threads = 2, .n_seq_max = 2});
  b.eval(tokens_of(5, nv, 8), 0);
  EXPECT_EQ(b.load_sequence_bytes(1, bytes), std::vector<int32_t>(t.begin(), t.begin() + 6));
  const std::vector<float> got = copy_of(b.eval({t.data() + 6, 3}, 1, true));
  EXPECT_LT(max_abs_diff(got, {want.data() + 6 * nv, static_cast<size_t>(3 * nv)}), 1e-4);

  // A file without the state (another version) and a truncated one are refused before anything changes.
  std::string v1 = bytes;
  v1[4] = 1;
  EXPECT_THROW(b.load_sequence_bytes(1, v1), InvalidArgument);
  EXPECT_THROW(b.load_sequence_bytes(1, bytes.substr(0, bytes.size() - 4)), FormatError);
  EXPECT_EQ(b.cache().max_pos(1), 8);
  ASSERT_NE(b.cache().recurrent(), nullptr);
  EXPECT_GE(b.cache().recurrent()->slot_of(1), 0);
}

TEST(RecurrentState, SsmLayersKeepNoKv) {
  test::TinyGraniteHybrid tiny(test::GraniteHybridConfig{});
  auto m = model::Model::load(tiny.path().string());
  runtime::Context ctx(m, {.n_ctx = 64, .n_threads = 2});
  EXPECT_FALSE(ctx.cache().stores(0));
  EXPECT_TRUE(ctx.cache().stores(1));
  EXPECT_FALSE(ctx.cache().stores(2));
  EXPECT_EQ(ctx.cache().bytes(), runtime::KvCache::planned_bytes(m->hparams(), 64, TensorType::F16, TensorType::F16, 0));
  EXPECT_EQ(ctx.cache().bytes(), 64 * 2 * 2 * tiny.config().n_head_kv * tiny.config().head_dim);  // one layer's K and V
  ASSERT_NE(ctx.cache().recurrent(), nullptr);
  const test::SsmConfig& s = tiny.config().ssm;
  EXPECT_EQ(ctx.cache().recurrent()->bytes(),
            2 * int64_t(sizeof(float)) * ((s.d_conv - 1) * s.conv_ch() + s.d_inner * s.d_state));
}

}  // namespace
}  // namespace ferrite
