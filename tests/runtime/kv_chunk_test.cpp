// The window cache for chunked attention (runtime/kv_cache.h with
// HParams::reach() by chunks: llama4's RoPE layers): a context that keeps
// for those layers only the cells of the chunk their next queries are in
// gives the logits of one that keeps the whole cache (--swa-full) bit for
// bit, over prompts of many chunks in passes that straddle chunk boundaries,
// generation, rows-as-steps drafts, two sequences, a copied range, a removed
// range, quantized caches and a save/load round trip; the window holds the
// cells a pass needs and no more (counted against the rule: per sequence of
// the pass, its positions from the chunk start of its lowest position); what
// it cannot serve (a shift, a token that would see a dropped chunk) is
// refused naming --swa-full; `info`'s figure for Llama 4 Scout's shape.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "model/kv_quant.h"
#include "model/model.h"
#include "model/tiny_llama4.h"
#include "runtime/context.h"
#include "runtime/sequence.h"
#include "support/logits.h"

// (Its own namespace: the unity build puts it beside kv_window_test.cpp.)
namespace ferrite::kv_chunk_test {
namespace {

constexpr int64_t kChunk = 16;  // the model's attention.chunk_size
constexpr int64_t kCtx = 1024;  // cells of the whole cache; the window cache gets 256

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

int32_t argmax(std::span<const float> l) {
  return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
}

// The cells a chunk window must hold after a pass, from the definition of
// chunked attention alone: for each sequence, its positions from the start
// of the chunk of its lowest position in the pass (what the pass's tokens
// and every later one may see) up to its highest. `lowest` / `highest`:
// per sequence (-1: not in the pass; those keep what they held).
struct Expect {
  std::array<int32_t, 4> lowest{-1, -1, -1, -1}, highest{-1, -1, -1, -1};
};

int64_t cells_held(const runtime::KvCache& win, int seq) {
  int64_t n = 0;
  for (int64_t i = 0; i < win.size(); ++i) n += win.cell(i).pos >= 0 && win.cell(i).has(seq) ? 1 : 0;
  return n;
}

struct ChunkParam {
  TensorType type;
  int64_t n_batch;
};

class KvChunk : public ::testing::TestWithParam<ChunkParam> {
 protected:
  void SetUp() override {
    test::Llama4Config c;
    c.chunk = kChunk;
    tiny_ = test::make_tiny_llama4(c);
    model_ = model::Model::load(tiny_->path().string());
  }
  runtime::ContextParams params(bool swa_full, int n_seq = 1) const {
    return {.n_ctx = kCtx, .n_batch = GetParam().n_batch, .n_threads = 2, .cache_type = GetParam().type,
            .cache_type_v = GetParam().type, .swa_full = swa_full, .n_seq_max = n_seq};
  }
  void both(runtime::Context& win, runtime::Context& full, const runtime::Batch& b, const std::string& what) {
    win.decode(b);
    full.decode(b);
    ASSERT_EQ(win.n_outputs(), full.n_outputs());
    for (int64_t i = 0; i < win.n_outputs(); ++i) {
      ASSERT_TRUE(same_bits(win.logits(i), full.logits(i))) << what << ", output " << i;
    }
  }
  // After a decode of one pass, the window holds per sequence exactly the
  // positions [chunk start of its lowest, its highest].
  static void expect_held(runtime::Context& win, int seq, int32_t lowest, int32_t highest,
                          const std::string& what) {
    const int64_t start = lowest / kChunk * kChunk;
    EXPECT_EQ(cells_held(*win.cache().window(), seq), highest + 1 - start) << what << ", sequence " << seq;
  }
  std::unique_ptr<test::TinyGguf> tiny_;
  std::shared_ptr<const model::Model> model_;
};

TEST_P(KvChunk, OneSequenceEqualsTheWholeCache) {
  runtime::Context win(model_, params(false)), full(model_, params(true));
  const model::HParams& hp = model_->hparams();
  ASSERT_EQ(hp.n_chunk, kChunk);
  ASSERT_NE(win.cache().window(), nullptr);
  ASSERT_EQ(full.cache().window(), nullptr);
  // Layers 0-2 attend in chunks (the window's), layer 3 (NoPE) over the whole context.
  for (int64_t il = 0; il < 3; ++il) EXPECT_TRUE(win.cache().window()->keeps(il)) << il;
  EXPECT_FALSE(win.cache().window()->keeps(3));
  EXPECT_TRUE(win.cache().keeps(3));
  // llama.cpp's rule with the chunk for the window: 16 + n_batch, rounded up to 256.
  EXPECT_EQ(win.cache().window()->size(), 256);
  const int64_t row = GetParam().type == TensorType::F16 ? 2 * hp.n_embd_kv()
                                                          : model::kv_quant_row_bytes(GetParam().type, hp.n_embd_kv());
  EXPECT_EQ(win.cache().bytes(), (1 * kCtx + 3 * 256) * 2 * row);
  EXPECT_EQ(full.cache().bytes(), 4 * kCtx * 2 * row);
  EXPECT_EQ(win.cache().bytes(), runtime::KvCache::planned_bytes(hp, kCtx, GetParam().type, GetParam().type, 256));
  // A prompt of 37 chunks (more than twice the window cache) in one decode:
  // passes of n_batch that straddle chunk boundaries (n_batch 40, 7), or
  // fill one chunk each (16); every row's logits.
  const std::vector<int32_t> prompt = test::any_tokens(600, hp.n_vocab, 7);
  runtime::Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, true);
  both(win, full, b, "prompt");
  const auto last_pass = static_cast<int32_t>((prompt.size() - 1) / static_cast<size_t>(GetParam().n_batch) *
                                              static_cast<size_t>(GetParam().n_batch));
  expect_held(win, 0, last_pass, static_cast<int32_t>(prompt.size()) - 1, "after the prompt");
  // Greedy generation, one token a step, across several chunk boundaries.
  int32_t pos = static_cast<int32_t>(prompt.size());
  int32_t next = argmax(full.logits(full.n_outputs() - 1));
  for (int step = 0; step < 70; ++step, ++pos) {
    b.clear();
    b.add(next, pos, 0, true);
    both(win, full, b, "step " + std::to_string(step));
    expect_held(win, 0, pos, pos, "step " + std::to_string(step));
    next = argmax(full.logits(0));
  }
  // Speculative verification: drafts of up to 8 (one pass: a later pass
  // that enters a new chunk drops the old one, which the rejected rows then
  // need) as rows of one-token steps, some straddling a chunk boundary, the
  // last half rejected (removed), then the next round.
  const auto n_draft = static_cast<size_t>(std::min<int64_t>(8, GetParam().n_batch));
  for (int round = 0; round < 8; ++round) {
    const std::vector<int32_t> draft = test::any_tokens(n_draft, hp.n_vocab, 100 + static_cast<uint32_t>(round));
    b.clear();
    b.rows_as_steps = true;
    for (size_t i = 0; i < draft.size(); ++i) b.add(draft[i], pos + static_cast<int32_t>(i), 0, true);
    both(win, full, b, "draft round " + std::to_string(round));
    pos += static_cast<int32_t>(n_draft / 2);
    win.remove_range(0, pos, -1);
    full.remove_range(0, pos, -1);
  }
  b.clear();
  b.add(next, pos, 0, true);
  both(win, full, b, "after the drafts");
}

TEST_P(KvChunk, TwoSequencesACopyAndARemovedRange) {
  runtime::Context win(model_, params(false, 2)), full(model_, params(true, 2));
  ASSERT_NE(win.cache().window(), nullptr);
  EXPECT_EQ(win.cache().window()->size(), 256);  // 2 * 16 + n_batch, rounded up
  const int64_t nv = model_->hparams().n_vocab;
  const std::vector<int32_t> a = test::any_tokens(300, nv, 11);
  const std::vector<int32_t> c = test::any_tokens(261, nv, 12);
  // Both prompts, 12 tokens each per batch (a pass straddles a chunk
  // boundary every fourth batch), interleaved.
  runtime::Batch b;
  for (size_t i = 0; i < a.size(); i += 12) {
    b.clear();
    for (size_t j = i; j < std::min(a.size(), i + 12); ++j) b.add(a[j], static_cast<int32_t>(j), 0, true);
    for (size_t j = i; j < std::min(c.size(), i + 12); ++j) b.add(c[j], static_cast<int32_t>(j), 1, true);
    both(win, full, b, "prompts at " + std::to_string(i));
    if (GetParam().n_batch >= 24) {  // one pass: its lowest positions decide
      const auto hi = static_cast<int32_t>(std::min(a.size(), i + 12)) - 1;
      expect_held(win, 0, static_cast<int32_t>(i), hi, "prompts at " + std::to_string(i));
    }
  }
  // Generation of both in one batch.
  int32_t pa = 300, pc = 261;
  for (int step = 0; step < 40; ++step) {
    b.clear();
    b.add(a[static_cast<size_t>(step)], pa++, 0, true);
    b.add(c[static_cast<size_t>(step)], pc++, 1, true);
    both(win, full, b, "step " + std::to_string(step));
    expect_held(win, 0, pa - 1, pa - 1, "step " + std::to_string(step));
    expect_held(win, 1, pc - 1, pc - 1, "step " + std::to_string(step));
  }
  // Sequence 1 ends; sequence 0's last 1.5 chunks are copied into sequence 1
  // (the window copies those it holds: the current chunk's), and both go on
  // from the same position.
  const int32_t from = pa - 3 * static_cast<int32_t>(kChunk) / 2;
  for (runtime::Context* x : {&win, &full}) {
    x->remove_range(1, 0, -1);
    ASSERT_EQ(x->copy_range(0, 1, from, pa), pa - from);
  }
  EXPECT_EQ(cells_held(*win.cache().window(), 1), pa - (pa - 1) / kChunk * kChunk);
  for (int step = 0; step < 30; ++step) {
    b.clear();
    b.add(a[static_cast<size_t>(50 + step)], pa, 0, true);
    b.add(c[static_cast<size_t>(50 + step)], pa, 1, true);
    ++pa;
    both(win, full, b, "after the copy, step " + std::to_string(step));
  }
  // A batch of 8 for sequence 0, its last 6 positions removed and evaluated
  // again with other tokens: the batch's first position still sees its chunk.
  b.clear();
  for (int i = 0; i < 8; ++i) b.add(a[static_cast<size_t>(100 + i)], pa + i, 0, true);
  both(win, full, b, "batch of 8");
  pa += 2;
  win.remove_range(0, pa, -1);
  full.remove_range(0, pa, -1);
  b.clear();
  for (int i = 0; i < 6; ++i) b.add(c[static_cast<size_t>(i)], pa + i, 0, true);
  both(win, full, b, "re-evaluated range");
  // Going back into a chunk the window dropped: refused (llama.cpp
  // re-evaluates); within the current chunk it goes on; the whole cache can.
  const int32_t back = pa - 2 * static_cast<int32_t>(kChunk);
  EXPECT_TRUE(win.cache().can_continue(0, (pa + 6) / kChunk * kChunk));
  win.remove_range(1, back, -1);
  full.remove_range(1, back, -1);
  EXPECT_FALSE(win.cache().can_continue(1, back));
  EXPECT_TRUE(full.cache().can_continue(1, back));
  b.clear();
  b.add(a[0], back, 1, true);
  try {
    win.decode(b);
    ADD_FAILURE() << "the chunk cache evaluated a token that sees dropped cells";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--swa-full"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("chunk"), std::string::npos) << e.what();
  }
  full.decode(b);
  // Sequence 0 goes on untouched by the failure, and sequence 1 from scratch.
  win.remove_range(1, 0, -1);
  full.remove_range(1, 0, -1);
  EXPECT_TRUE(win.cache().can_continue(1, 0));
  b.clear();
  b.add(a[1], pa + 6, 0, true);
  for (int i = 0; i < 40; ++i) b.add(c[static_cast<size_t>(i)], i, 1, true);
  both(win, full, b, "after the refusal");
}

TEST_P(KvChunk, SaveLoadRoundTrip) {
  runtime::Context win(model_, params(false)), full(model_, params(true));
  const int64_t nv = model_->hparams().n_vocab;
  const std::vector<int32_t> prompt = test::any_tokens(500, nv, 21);  // ends 4 into its chunk
  win.eval(prompt, 0);
  full.eval(prompt, 0);
  const std::string win_state = win.save_sequence_bytes(0, prompt);
  const std::string full_state = full.save_sequence_bytes(0, prompt);
  EXPECT_LT(win_state.size(), full_state.size());  // the chunked layers' chunk only

  runtime::Context win2(model_, params(false)), win3(model_, params(false)), full2(model_, params(true));
  EXPECT_EQ(win2.load_sequence_bytes(0, win_state), prompt);
  EXPECT_EQ(win3.load_sequence_bytes(0, full_state), prompt);
  EXPECT_EQ(full2.load_sequence_bytes(0, full_state), prompt);
  // From the whole cache's file a window takes what the next token sees: its chunk.
  EXPECT_EQ(cells_held(*win3.cache().window(), 0), 500 - 496);
  runtime::Context full3(model_, params(true));
  EXPECT_THROW(full3.load_sequence_bytes(0, win_state), InvalidArgument);

  const std::vector<int32_t> more = test::any_tokens(40, nv, 22);
  const std::span<const float> ref = full.eval(more, 0, true);
  const std::vector<float> expect(ref.begin(), ref.end());
  for (runtime::Context* c : {&win, &win2, &win3, &full2}) {
    const std::span<const float> got = c->eval(more, 0, true);
    EXPECT_TRUE(same_bits(got, expect)) << (c == &win ? "win" : c == &win2 ? "win2" : c == &win3 ? "win3" : "full2");
  }
}

INSTANTIATE_TEST_SUITE_P(Types, KvChunk,
                         ::testing::Values(ChunkParam{TensorType::F16, 16}, ChunkParam{TensorType::F16, 40},
                                           ChunkParam{TensorType::F16, 7}, ChunkParam{TensorType::Q8_0, 40},
                                           ChunkParam{TensorType::F32, 16}),
                         [](const auto& info) {
                           return tensor_type_name(info.param.type) + "_b" + std::to_string(info.param.n_batch);
                         });

TEST(KvChunkRules, NoShiftAndSequencesEvaluateAgain) {
  test::Llama4Config c;
  c.chunk = kChunk;
  const auto tiny = test::make_tiny_llama4(c);
  const auto model = model::Model::load(tiny->path().string());
  runtime::Context win(model, {.n_ctx = kCtx, .n_batch = 32, .n_threads = 2});
  ASSERT_NE(win.cache().window(), nullptr);
  const int64_t nv = model->hparams().n_vocab;
  const std::vector<int32_t> prompt = test::any_tokens(200, nv, 31);
  win.eval(prompt, 0);
  try {
    win.shift_sequence(0, 100, -1, -50);
    ADD_FAILURE() << "a chunk window cache shifted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--swa-full"), std::string::npos) << e.what();
  }
  // A sequence over the window: no context shift, and a prompt that repeats
  // a prefix from a chunk the window has moved past is evaluated from its
  // start, giving a fresh context's logits.
  runtime::Sequence seq(win, {.seq = 1});
  EXPECT_FALSE(seq.context_shift());
  const std::vector<int32_t> p1 = test::any_tokens(300, nv, 32);
  seq.prefill(p1);
  std::vector<int32_t> p2(p1.begin(), p1.begin() + 150);
  const std::vector<int32_t> tail = test::any_tokens(20, nv, 33);
  p2.insert(p2.end(), tail.begin(), tail.end());
  const std::span<const float> got = seq.prefill(p2);
  const std::vector<float> g(got.begin(), got.end());
  runtime::Context fresh(model, {.n_ctx = kCtx, .n_batch = 32, .n_threads = 2});
  const std::span<const float> want = fresh.eval(p2, 0);
  EXPECT_TRUE(same_bits(g, want));
  // --swa-full keeps the whole cache, and the shift.
  runtime::Context full(model, {.n_ctx = kCtx, .n_batch = 32, .n_threads = 2, .swa_full = true});
  EXPECT_EQ(full.cache().window(), nullptr);
  full.eval(prompt, 0);
  EXPECT_NO_THROW(full.shift_sequence(0, 100, -1, -50));
}

// The chunk is llama4's reach: a model of 8192-position chunks (llama.cpp's
// fixed value, the default without attention.chunk_size) at a context of
// 4096 keeps the whole cache (its window would not be smaller).
TEST(KvChunkRules, AChunkAsLargeAsTheContextKeepsTheWholeCache) {
  test::Llama4Config c;
  c.chunk = 0;  // the key absent: 8192
  const auto tiny = test::make_tiny_llama4(c);
  const auto model = model::Model::load(tiny->path().string());
  EXPECT_EQ(model->hparams().n_chunk, 8192);
  EXPECT_EQ(runtime::window_cells(model->hparams(), {.n_ctx = 4096}), 0);
  EXPECT_EQ(runtime::window_cells(model->hparams(), {.n_ctx = 16384}), 8192 + 512);
}

// Llama 4 Scout's shape (48 layers, every fourth NoPE and global, the others
// in chunks of 8192; 8 KV heads of 128: f16 K and V 4096 bytes a cell and
// layer) at a 32768-token context and batch 512: llama.cpp's SWA cache for
// its chunked layers has min(32768, 8192 + 512) = 8704 cells, rounded up to
// 256 (already).
TEST(KvChunkSize, Llama4ScoutFigure) {
  model::HParams hp;
  hp.n_layer = 48;
  hp.n_head = 40;
  hp.n_head_kv = 8;
  hp.head_dim = 128;
  hp.n_chunk = 8192;
  for (int64_t il = 0; il < hp.n_layer; ++il) hp.swa_layers.push_back((il + 1) % 4 != 0);
  EXPECT_EQ(hp.reach().span(), 8192);
  const int64_t window = runtime::window_cells(hp, {.n_ctx = 32768, .n_batch = 512});
  EXPECT_EQ(window, 8704);
  const int64_t cell = 4096;
  EXPECT_EQ(runtime::KvCache::planned_bytes(hp, 32768, TensorType::F16, TensorType::F16, window),
            12 * 32768 * cell + 36 * 8704 * cell);  // 2760 MiB
  EXPECT_EQ(runtime::KvCache::planned_bytes(hp, 32768, TensorType::F16, TensorType::F16, 0),
            48 * 32768 * cell);  // 6144 MiB
  // Four sequences (the server's slots): 4 * 8192 + 512 > 32768: the whole context.
  EXPECT_EQ(runtime::window_cells(hp, {.n_ctx = 32768, .n_batch = 512, .n_seq_max = 4}), 0);
}

// The one predicate behind the masks, the drops and can_continue.
TEST(KvChunkSize, ReachPredicate) {
  const model::AttentionReach chunks{0, 16}, window{24, 0};
  EXPECT_EQ(chunks.first_visible(0), 0);
  EXPECT_EQ(chunks.first_visible(15), 0);
  EXPECT_EQ(chunks.first_visible(16), 16);
  EXPECT_EQ(chunks.first_visible(47), 32);
  EXPECT_TRUE(chunks.sees(31, 16));
  EXPECT_FALSE(chunks.sees(32, 31));
  EXPECT_TRUE(chunks.sees(32, 32));
  EXPECT_EQ(window.first_visible(30), 7);
  EXPECT_TRUE(window.sees(30, 7));
  EXPECT_FALSE(window.sees(30, 6));
  EXPECT_FALSE(model::AttentionReach{}.limited());
}

}  // namespace
}  // namespace ferrite::kv_chunk_test
