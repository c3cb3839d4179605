// What a recurrent state (recurrent_state.h) asks of the cache's operations:
// a state has absorbed every position of its sequence, in order, so a
// sequence of such a model continues only at its next position, and a range
// removed or copied must hold all of the sequence or none of it (llama.cpp's
// recurrent memory refuses partial removals the same way; the callers then
// evaluate the sequence again from its start: Sequence::prefill and the
// server ask can_continue() first).
#include <array>
#include <string>

#include "core/error.h"
#include "runtime/kv_cache.h"

namespace ferrite::runtime {

void KvCache::check_recurrent_batch(const int32_t* seq, const int32_t* pos, int64_t n) const {
  std::array<int32_t, kMaxSequences> next{};
  std::array<bool, kMaxSequences> seen{};
  for (int64_t t = 0; t < n; ++t) {
    const auto s = static_cast<size_t>(seq[t]);
    if (!seen[s]) {
      seen[s] = true;
      const int32_t last = max_pos(seq[t]);
      next[s] = last < 0 ? pos[t] : last + 1;  // a sequence without cells starts where it likes
    }
    if (pos[t] != next[s]) {
      throw InvalidArgument("sequence " + std::to_string(seq[t]) + " of a recurrent model continues at position " +
                            std::to_string(next[s]) + ", not " + std::to_string(pos[t]) +
                            " (its state holds every earlier position; tokens of a sequence come in order)");
    }
    ++next[s];
  }
}

void KvCache::check_recurrent_range(int seq, int32_t p0, int32_t p1, const char* what) const {
  // Per sequence: cells inside and outside the range.
  std::array<bool, kMaxSequences> in{}, out{};
  SeqSet all;
  for (int s = 0; s < kMaxSequences; ++s) all.add(s);
  for (const Cell& c : cells_) {
    if (c.pos < 0) continue;
    const bool inside = c.pos >= p0 && (p1 < 0 || c.pos < p1);
    c.seqs.for_each_common(all, [&](int s) {
      if (seq >= 0 && s != seq) return;
      (inside ? in : out)[static_cast<size_t>(s)] = true;
    });
  }
  for (int s = 0; s < kMaxSequences; ++s) {
    if (in[static_cast<size_t>(s)] && out[static_cast<size_t>(s)]) {
      throw InvalidArgument(std::string("cannot ") + what + " positions [" + std::to_string(p0) + ", " +
                            (p1 < 0 ? std::string("end") : std::to_string(p1)) + ") of sequence " + std::to_string(s) +
                            " of a recurrent model: its state holds all its positions; clear the sequence and "
                            "evaluate it again");
    }
  }
}

void KvCache::release_empty_states() {
  std::array<bool, kMaxSequences> present{};
  SeqSet all;
  for (int s = 0; s < kMaxSequences; ++s) all.add(s);
  for (const Cell& c : cells_) {
    if (c.pos >= 0) c.seqs.for_each_common(all, [&](int s) { present[static_cast<size_t>(s)] = true; });
  }
  for (int s = 0; s < kMaxSequences; ++s) {
    if (!present[static_cast<size_t>(s)]) recurrent_->release(s);
  }
}

}  // namespace ferrite::runtime
