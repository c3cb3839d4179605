// Sequence ids up to kMaxSequences - 1 (the server's --parallel reaches 128
// and more): every id owns its cells, copies and removals touch only the ids
// named, and the first id past the limit is refused.
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/model.h"
#include "runtime/kv_cache.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

TEST(SequenceIds, EveryIdOwnsItsCells) {
  static_assert(runtime::kMaxSequences >= 128, "the server's --parallel 128 needs 128 ids");
  FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
  auto model = model::Model::load(model_path.string());
  constexpr int kN = runtime::kMaxSequences;
  runtime::KvCache cache(model->hparams(), 2 * kN);
  std::vector<int32_t> seq(kN), pos(kN, 0);
  for (int s = 0; s < kN; ++s) seq[static_cast<size_t>(s)] = s;
  const std::vector<int32_t> slots = cache.allocate(seq.data(), pos.data(), kN);
  ASSERT_EQ(cache.used(), kN);
  for (int s = 0; s < kN; ++s) {
    const runtime::KvCache::Cell& c = cache.cell(slots[static_cast<size_t>(s)]);
    for (int other : {0, 63, 64, 127, 128, 200, kN - 1}) EXPECT_EQ(c.has(other), other == s) << s << " " << other;
  }
  cache.copy_sequence(3, 200);  // 200's cells: its own and 3's
  EXPECT_TRUE(cache.cell(slots[3]).has(200));
  cache.remove(200, 0, -1);  // 3's cell stays (3 still uses it), 200's own is freed
  EXPECT_TRUE(cache.cell(slots[3]).has(3));
  EXPECT_FALSE(cache.cell(slots[3]).has(200));
  EXPECT_EQ(cache.cell(slots[200]).pos, -1);
  EXPECT_EQ(cache.used(), kN - 1);
  const int32_t bad = kN, p0 = 0;
  EXPECT_THROW(cache.allocate(&bad, &p0, 1), InvalidArgument);
  EXPECT_THROW(cache.copy_sequence(0, kN), InvalidArgument);
}

// Homes (the server's slots): sequences decoded one token each per step,
// interleaved, keep their cells in their own share; without homes they
// would collide and scatter.
TEST(SequenceIds, HomesKeepEachSequenceInItsShare) {
  FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
  auto model = model::Model::load(model_path.string());
  constexpr int kSeqs = 4, kShare = 16;
  runtime::KvCache cache(model->hparams(), kSeqs * kShare);
  for (int s = 0; s < kSeqs; ++s) cache.set_sequence_home(s, s * kShare);
  for (int32_t p = 0; p < kShare; ++p) {
    std::vector<int32_t> seq, pos;
    for (int s = kSeqs - 1; s >= 0; --s) {  // reverse order: no help from allocation order
      seq.push_back(s);
      pos.push_back(p);
    }
    const std::vector<int32_t> slots = cache.allocate(seq.data(), pos.data(), kSeqs);
    for (size_t i = 0; i < slots.size(); ++i) {
      EXPECT_EQ(slots[i] / kShare, seq[i]) << "sequence " << seq[i] << " position " << p;
    }
  }
  EXPECT_THROW(cache.set_sequence_home(runtime::kMaxSequences, 0), InvalidArgument);
  EXPECT_THROW(cache.set_sequence_home(0, kSeqs * kShare), InvalidArgument);
}

}  // namespace
}  // namespace ferrite
