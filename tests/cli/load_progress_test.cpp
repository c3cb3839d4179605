// model::load_with_progress (the load bar of the tools): the callback starts
// at 0, never goes back, ends at 100%, and its total is the tensor bytes
// the GGUF file lists.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "core/error.h"
#include "gguf/file.h"
#include "model/load_progress.h"
#include "support/test_data.h"

namespace {

using namespace ferrite;

TEST(LoadProgress, MonotonicFromZeroToTotal) {
  for (const char* name : {"models/stories260K.gguf", "models/synth/synth-llama-Q4_K_M.gguf"}) {
    SCOPED_TRACE(name);
    FERRITE_SHARED_FILE(path, name);
    uint64_t want_total = 0;
    const gguf::File file = gguf::File::open(path.string());
    for (const auto& t : file.tensors()) want_total += t.n_bytes;
    ASSERT_GT(want_total, 0u);

    std::vector<std::pair<uint64_t, uint64_t>> calls;
    const auto m = model::load_with_progress(path.string(), [&](uint64_t done, uint64_t total) {
      calls.emplace_back(done, total);
    });
    ASSERT_NE(m, nullptr);
    ASSERT_GE(calls.size(), 2u);
    EXPECT_EQ(calls.front(), std::make_pair(uint64_t{0}, want_total));
    EXPECT_EQ(calls.back(), std::make_pair(want_total, want_total));
    for (size_t i = 1; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].second, want_total);
      EXPECT_GE(calls[i].first, calls[i - 1].first) << "call " << i;
      EXPECT_LE(calls[i].first, want_total);
    }
  }
}

TEST(LoadProgress, WithoutCallbackLoadsPlainly) {
  FERRITE_SHARED_FILE(path, "models/stories260K.gguf");
  const auto m = model::load_with_progress(path.string(), nullptr);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->hparams().n_embd, 64);  // stories260K: dim 64 (shared/README.md)
}

TEST(LoadProgress, MissingFileThrowsBeforeAnyProgress) {
  int calls = 0;
  EXPECT_THROW(model::load_with_progress("/nonexistent/model.gguf", [&](uint64_t, uint64_t) { ++calls; }),
               IoError);
  EXPECT_EQ(calls, 0);
}

}  // namespace
