// The sliding-window KV cache (runtime/kv_cache.h, kv_cache_window.cpp):
// a context that keeps only the window of gemma3's (and gemma2's) sliding
// layers gives the logits of one that keeps the whole cache (--swa-full) bit
// for bit, over prompts and generations many windows long, with batches
// crossing the window's edge, two sequences in one cache, a removed range,
// speculative rows-as-steps batches, quantized caches and a save/load round
// trip; what a window cannot serve (a shift, a token that would see a
// dropped cell) is refused with a message naming --swa-full; and the window
// is sized by llama.cpp's rule, which the gemma3-1B figure checks.
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "model/model.h"
#include "model/ref_gemma.h"
#include "runtime/context.h"
#include "runtime/sequence.h"
#include "support/logits.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

constexpr int64_t kWindow = 24;   // the model's sliding window
constexpr int64_t kCtx = 1024;    // cells of the whole cache; the window cache gets 256

std::shared_ptr<const model::Model> gemma3(test::TinyGemma*& keep) {
  test::GemmaConfig c;
  c.version = 3;
  c.n_layer = 6;  // layers 0-4 slide, layer 5 is global
  c.n_embd = 64;
  c.n_head = 8;
  c.n_head_kv = 2;  // K/V rows of 32 values: the quantized caches apply
  c.head_dim = 16;
  c.n_ff = 96;
  c.n_swa = kWindow;
  c.freq_base = 1000000.0;
  c.n_ctx = kCtx;
  keep = new test::TinyGemma(c);
  return model::Model::load(keep->path().string());
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

int32_t argmax(std::span<const float> l) {
  return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
}

struct WindowParam {
  TensorType type;
  int64_t n_batch;
};

class KvWindow : public ::testing::TestWithParam<WindowParam> {
 protected:
  void SetUp() override { model_ = gemma3(tiny_); }
  void TearDown() override { delete tiny_; }
  runtime::ContextParams params(bool swa_full, int n_seq = 1) const {
    return {.n_ctx = kCtx, .n_batch = GetParam().n_batch, .n_threads = 2, .cache_type = GetParam().type,
            .cache_type_v = GetParam().type, .swa_full = swa_full, .n_seq_max = n_seq};
  }
  // Both contexts evaluate the batch; their logits must be the same bits.
  void both(runtime::Context& win, runtime::Context& full, const runtime::Batch& b, const std::string& what) {
    win.decode(b);
    full.decode(b);
    ASSERT_EQ(win.n_outputs(), full.n_outputs());
    for (int64_t i = 0; i < win.n_outputs(); ++i) {
      ASSERT_TRUE(same_bits(win.logits(i), full.logits(i))) << what << ", output " << i;
    }
  }
  test::TinyGemma* tiny_ = nullptr;
  std::shared_ptr<const model::Model> model_;
};

TEST_P(KvWindow, OneSequenceEqualsTheWholeCache) {
  runtime::Context win(model_, params(false)), full(model_, params(true));
  ASSERT_NE(win.cache().window(), nullptr);
  ASSERT_EQ(full.cache().window(), nullptr);
  EXPECT_EQ(win.cache().window()->size(), 256);
  EXPECT_LT(win.cache().bytes(), full.cache().bytes());
  EXPECT_EQ(win.cache().bytes(), runtime::KvCache::planned_bytes(model_->hparams(), kCtx, GetParam().type,
                                                                 GetParam().type, 256));
  // A prompt of 25 windows (more than twice the window cache), every row's
  // logits, in passes of n_batch that cross the window's edge anywhere.
  const std::vector<int32_t> prompt = test::any_tokens(600, model_->hparams().n_vocab, 7);
  runtime::Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, true);
  both(win, full, b, "prompt");
  // Greedy generation, one token a step.
  int32_t pos = static_cast<int32_t>(prompt.size());
  int32_t next = argmax(full.logits(full.n_outputs() - 1));
  for (int step = 0; step < 120; ++step, ++pos) {
    b.clear();
    b.add(next, pos, 0, true);
    both(win, full, b, "step " + std::to_string(step));
    next = argmax(full.logits(0));
  }
  // Speculative verification: a draft of 7 as rows of one-token steps, the
  // last 4 rejected (removed), then the next round.
  for (int round = 0; round < 3; ++round) {
    const std::vector<int32_t> draft = test::any_tokens(8, model_->hparams().n_vocab, 100 + round);
    b.clear();
    b.rows_as_steps = true;
    for (size_t i = 0; i < draft.size(); ++i) b.add(draft[i], pos + static_cast<int32_t>(i), 0, true);
    both(win, full, b, "draft round " + std::to_string(round));
    pos += 4;
    win.remove_range(0, pos, -1);
    full.remove_range(0, pos, -1);
  }
  b.clear();
  b.add(next, pos, 0, true);
  both(win, full, b, "after the drafts");
}

TEST_P(KvWindow, TwoSequencesAndARemovedRange) {
  runtime::Context win(model_, params(false, 2)), full(model_, params(true, 2));
  ASSERT_NE(win.cache().window(), nullptr);
  const std::vector<int32_t> a = test::any_tokens(300, model_->hparams().n_vocab, 11);
  const std::vector<int32_t> c = test::any_tokens(260, model_->hparams().n_vocab, 12);
  // Both prompts in chunks of 16 tokens each per batch, interleaved.
  runtime::Batch b;
  for (size_t i = 0; i < a.size(); i += 16) {
    b.clear();
    for (size_t j = i; j < std::min(a.size(), i + 16); ++j) b.add(a[j], static_cast<int32_t>(j), 0, true);
    for (size_t j = i; j < std::min(c.size(), i + 16); ++j) b.add(c[j], static_cast<int32_t>(j), 1, true);
    both(win, full, b, "prompts at " + std::to_string(i));
  }
  // Generation of both in one batch.
  int32_t pa = 300, pc = 260;
  for (int step = 0; step < 60; ++step) {
    b.clear();
    b.add(a[static_cast<size_t>(step)], pa++, 0, true);
    b.add(c[static_cast<size_t>(step)], pc++, 1, true);
    both(win, full, b, "step " + std::to_string(step));
  }
  // A batch of 8 for sequence 0, its last 6 positions removed and evaluated
  // again with other tokens (the window still reaches back to the batch's
  // first position, as after a rejected draft).
  b.clear();
  for (int i = 0; i < 8; ++i) b.add(a[static_cast<size_t>(100 + i)], pa + i, 0, true);
  both(win, full, b, "batch of 8");
  pa += 2;
  win.remove_range(0, pa, -1);
  full.remove_range(0, pa, -1);
  b.clear();
  for (int i = 0; i < 6; ++i) b.add(c[static_cast<size_t>(i)], pa + i, 0, true);
  both(win, full, b, "re-evaluated range");
  // Removing more than the window holds: the window cannot go on there
  // (llama.cpp re-evaluates); the whole cache can.
  const int32_t back = pc - 3 * static_cast<int32_t>(kWindow);
  win.remove_range(1, back, -1);
  full.remove_range(1, back, -1);
  EXPECT_FALSE(win.cache().can_continue(1, back));
  EXPECT_TRUE(full.cache().can_continue(1, back));
  b.clear();
  b.add(a[0], back, 1, true);
  try {
    win.decode(b);
    ADD_FAILURE() << "the window cache evaluated a token that sees dropped cells";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--swa-full"), std::string::npos) << e.what();
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

TEST_P(KvWindow, SaveLoadRoundTrip) {
  runtime::Context win(model_, params(false)), full(model_, params(true));
  const std::vector<int32_t> prompt = test::any_tokens(500, model_->hparams().n_vocab, 21);
  win.eval(prompt, 0);
  full.eval(prompt, 0);
  const std::string win_state = win.save_sequence_bytes(0, prompt);
  const std::string full_state = full.save_sequence_bytes(0, prompt);
  EXPECT_LT(win_state.size(), full_state.size());  // the sliding layers' window only

  // Into fresh contexts: a window one from either file, a whole one from its own.
  runtime::Context win2(model_, params(false)), win3(model_, params(false)), full2(model_, params(true));
  EXPECT_EQ(win2.load_sequence_bytes(0, win_state), prompt);
  EXPECT_EQ(win3.load_sequence_bytes(0, full_state), prompt);
  EXPECT_EQ(full2.load_sequence_bytes(0, full_state), prompt);
  // A window's state lacks what a whole cache needs.
  runtime::Context full3(model_, params(true));
  EXPECT_THROW(full3.load_sequence_bytes(0, win_state), InvalidArgument);

  const std::vector<int32_t> more = test::any_tokens(40, model_->hparams().n_vocab, 22);
  // Every context continues with the logits of the original whole cache.
  const std::span<const float> ref = full.eval(more, 0, true);
  const std::vector<float> expect(ref.begin(), ref.end());
  for (runtime::Context* c : {&win, &win2, &win3, &full2}) {
    const std::span<const float> got = c->eval(more, 0, true);
    EXPECT_TRUE(same_bits(got, expect)) << (c == &win ? "win" : c == &win2 ? "win2" : c == &win3 ? "win3" : "full2");
  }
}

INSTANTIATE_TEST_SUITE_P(Types, KvWindow,
                         ::testing::Values(WindowParam{TensorType::F16, 16}, WindowParam{TensorType::F16, 40},
                                           WindowParam{TensorType::Q8_0, 16}, WindowParam{TensorType::F32, 16},
                                           WindowParam{TensorType::BF16, 16}),
                         [](const auto& info) {
                           return tensor_type_name(info.param.type) + "_b" + std::to_string(info.param.n_batch);
                         });

class KvWindowRules : public ::testing::Test {
 protected:
  void SetUp() override { model_ = gemma3(tiny_); }
  void TearDown() override { delete tiny_; }
  test::TinyGemma* tiny_ = nullptr;
  std::shared_ptr<const model::Model> model_;
};

TEST_F(KvWindowRules, NoShiftAndSequencesEvaluateAgain) {
  runtime::Context win(model_, {.n_ctx = kCtx, .n_batch = 32, .n_threads = 2});
  ASSERT_NE(win.cache().window(), nullptr);
  const std::vector<int32_t> prompt = test::any_tokens(200, model_->hparams().n_vocab, 31);
  win.eval(prompt, 0);
  try {
    win.shift_sequence(0, 100, -1, -50);
    ADD_FAILURE() << "a window cache shifted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--swa-full"), std::string::npos) << e.what();
  }
  // A sequence over a window cache: no context shift, and a prompt that
  // repeats a prefix the window has moved past is evaluated from its start,
  // giving the logits a fresh context gives.
  runtime::Sequence seq(win, {.seq = 1});
  EXPECT_FALSE(seq.context_shift());
  const std::vector<int32_t> p1 = test::any_tokens(300, model_->hparams().n_vocab, 32);
  seq.prefill(p1);
  std::vector<int32_t> p2(p1.begin(), p1.begin() + 150);
  const std::vector<int32_t> tail = test::any_tokens(20, model_->hparams().n_vocab, 33);
  p2.insert(p2.end(), tail.begin(), tail.end());
  const std::span<const float> got = seq.prefill(p2);
  const std::vector<float> g(got.begin(), got.end());
  runtime::Context fresh(model_, {.n_ctx = kCtx, .n_batch = 32, .n_threads = 2});
  const std::span<const float> want = fresh.eval(p2, 0);
  EXPECT_TRUE(same_bits(g, want));
  // The whole cache (--swa-full) keeps the shift.
  runtime::Context full(model_, {.n_ctx = kCtx, .n_batch = 32, .n_threads = 2, .swa_full = true});
  full.eval(prompt, 0);
  EXPECT_NO_THROW(full.shift_sequence(0, 100, -1, -50));
}

// Layers kept by another backend (a GPU's, -ngl): the window of a cache
// that stores only the first layers here still decides the cells, and its
// moves reach the other backend through the mover, in an order that,
// applied cell by cell to a mirror of the window (what the GPU's copies
// do), leaves each cell holding the position the window says it holds.
// Without a mover the window moves nothing (the mirror needs no moves).
TEST_F(KvWindowRules, OffloadedWindowLayersMoveThroughTheMover) {
  const model::HParams& hp = model_->hparams();
  for (bool with_mover : {true, false}) {
    runtime::KvCache cache(hp, kCtx, TensorType::F16, TensorType::F16, /*n_storage_layers=*/3, /*window_cells=*/256);
    runtime::KvCache* win = cache.window();
    ASSERT_NE(win, nullptr);
    EXPECT_TRUE(win->stores(0));   // a sliding layer here
    EXPECT_FALSE(win->stores(3));  // a sliding layer elsewhere
    EXPECT_FALSE(cache.stores(4));
    EXPECT_FALSE(cache.stores(5));  // the global layer, elsewhere
    std::vector<int32_t> mirror(static_cast<size_t>(win->size()), -1);
    int64_t moves = 0;
    if (with_mover) {
      cache.set_movers({}, [&](std::span<const int32_t> from, std::span<const int32_t> to) {
        ASSERT_EQ(from.size(), to.size());
        for (size_t i = 0; i < from.size(); ++i) mirror[static_cast<size_t>(to[i])] = mirror[static_cast<size_t>(from[i])];
        moves += static_cast<int64_t>(from.size());
      });
    }
    // Two sequences of 400 positions, 16 tokens each a batch.
    for (int32_t p0 = 0; p0 < 400; p0 += 16) {
      std::vector<int32_t> seq, pos;
      for (int s = 0; s < 2; ++s) {
        for (int32_t p = p0; p < p0 + 16; ++p) {
          seq.push_back(s);
          pos.push_back(p);
        }
      }
      cache.allocate(seq.data(), pos.data(), static_cast<int64_t>(seq.size()));
      const std::vector<int32_t>& slots = cache.window_slots();
      for (size_t t = 0; t < slots.size(); ++t) mirror[static_cast<size_t>(slots[t])] = pos[t];
      for (int64_t c = 0; c < win->size(); ++c) {
        if (win->cell(c).pos >= 0) {
          ASSERT_EQ(mirror[static_cast<size_t>(c)], win->cell(c).pos) << "cell " << c;
        }
      }
    }
    if (with_mover) {
      EXPECT_GT(moves, 0) << "the window never moved a cell";
    }
  }
}

TEST(KvWindowSize, LlamaCppRuleAndTheGemma3Figure) {
  // llama.cpp (llama-kv-cache-iswa.cpp, 2025-2026): the SWA cache has
  // min(n_ctx, n_swa * n_seq + n_ubatch) cells rounded up to 256.
  EXPECT_EQ(runtime::KvCache::window_size(512, 1, 512, 32768), 1024);
  EXPECT_EQ(runtime::KvCache::window_size(4096, 1, 512, 32768), 4608);
  EXPECT_EQ(runtime::KvCache::window_size(512, 4, 512, 32768), 2560);
  EXPECT_EQ(runtime::KvCache::window_size(24, 1, 16, 1024), 256);
  EXPECT_EQ(runtime::KvCache::window_size(512, 4, 512, 1000), 1024);  // rounded after the min
  // gemma3 1B: 26 layers, every 6th global, window 512, 1 KV head of 256;
  // f16 K and V: 1024 bytes a cell and layer. At 32k: 4 global layers of
  // 32768 cells and 22 sliding ones of 1024 (llama.cpp's cache).
  model::HParams hp;
  hp.n_layer = 26;
  hp.n_head = 4;
  hp.n_head_kv = 1;
  hp.head_dim = 256;
  hp.n_swa = 512;
  for (int64_t il = 0; il < hp.n_layer; ++il) hp.swa_layers.push_back((il + 1) % 6 != 0);
  const int64_t window = runtime::KvCache::window_size(hp.n_swa, 1, 512, 32768);
  const int64_t llama_cpp = 4 * 32768 * 1024LL + 22 * 1024 * 1024LL;  // 150 MiB
  EXPECT_EQ(runtime::KvCache::planned_bytes(hp, 32768, TensorType::F16, TensorType::F16, window), llama_cpp);
  EXPECT_EQ(runtime::KvCache::planned_bytes(hp, 32768, TensorType::F16, TensorType::F16, 0), 26 * 32768 * 1024LL);
}

}  // namespace
}  // namespace ferrite
