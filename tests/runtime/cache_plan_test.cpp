// runtime::cache_plan (what --fit counts of the KV cache) against what a
// context with the same parameters allocates: its cells, the sliding-window
// layers' window (one per sequence: the server's slots) and the bytes of
// K/V, for one and several sequences, f16 and q8_0 caches, with --swa-full
// and without. Several sequences need a larger window than one: a plan that
// counted one sequence's window would miss the allocation.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "model/model.h"
#include "model/ref_gemma.h"
#include "runtime/context.h"

namespace ferrite {
namespace {

constexpr int64_t kWindow = 24;  // the model's sliding window
constexpr int64_t kCtx = 1024;

TEST(CachePlan, CountsWhatTheContextAllocates) {
  test::GemmaConfig c;
  c.version = 3;
  c.n_layer = 6;  // layers 0-4 slide, layer 5 is global
  c.n_embd = 64;
  c.n_head = 8;
  c.n_head_kv = 2;  // K/V rows of 32 values: q8_0 applies
  c.head_dim = 16;
  c.n_ff = 96;
  c.n_swa = kWindow;
  c.n_ctx = kCtx;
  test::TinyGemma tiny(c);
  auto model = model::Model::load(tiny.path().string());
  const model::HParams& hp = model->hparams();
  int64_t one_seq_window = 0;
  for (TensorType type : {TensorType::F16, TensorType::Q8_0}) {
    for (bool swa_full : {false, true}) {
      // 12 sequences: a window of 12 x 24 + 40 cells, 512 after the padding (one sequence's: 256).
      for (int n_seq : {1, 2, 12}) {
        const runtime::ContextParams p{.n_ctx = kCtx, .n_batch = 40, .n_threads = 2, .cache_type = type,
                                       .cache_type_v = type, .swa_full = swa_full, .n_seq_max = n_seq};
        const std::string what = tensor_type_name(type) + (swa_full ? ", --swa-full" : "") + ", " +
                                 std::to_string(n_seq) + " sequences";
        const runtime::CachePlan plan = runtime::cache_plan(hp, p);
        runtime::Context ctx(model, p);
        EXPECT_EQ(plan.n_cells, ctx.n_ctx()) << what;
        const runtime::KvCache* win = ctx.cache().window();
        EXPECT_EQ(plan.window_cells, win != nullptr ? win->size() : 0) << what;
        EXPECT_EQ(plan.bytes, ctx.cache().bytes()) << what;
        if (!swa_full && n_seq == 1) one_seq_window = plan.window_cells;
        if (!swa_full && n_seq == 12) {
          EXPECT_EQ(plan.window_cells, 512) << what;
          EXPECT_GT(plan.window_cells, one_seq_window) << what;
        }
      }
    }
  }
  EXPECT_EQ(one_seq_window, 256);
}

// A context of no cells by default takes the model's training context.
TEST(CachePlan, DefaultContextIsTheModels) {
  test::GemmaConfig c;
  c.version = 3;
  c.n_swa = kWindow;
  c.n_ctx = 512;
  test::TinyGemma tiny(c);
  auto model = model::Model::load(tiny.path().string());
  const runtime::CachePlan plan = runtime::cache_plan(model->hparams(), {.n_threads = 2});
  EXPECT_EQ(plan.n_cells, 512);
  runtime::Context ctx(model, {.n_threads = 2});
  EXPECT_EQ(plan.bytes, ctx.cache().bytes());
}

}  // namespace
}  // namespace ferrite
