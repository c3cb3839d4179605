// The window of a KvCache (kv_cache.h): before a batch, each batch
// sequence's cells that none of its tokens can see any more are dropped
// (those its lowest position in the batch does not see, reach_.sees: out of
// the sliding window, or before the chunk; no later position sees them), and
// the sequence's remaining cells are moved, when its tokens would not fit
// right after them, to free cells where they do, keeping their order and
// their offset modulo kRegionAlign. A sequence left without cells (a chunk's
// first token) starts again at the offset of its token's cell in the full
// cells (KvCache::allocate), and a copy is moved to the offset of the full
// cells' copy (align_window). Tokens then follow a sequence's cells in
// position order as in the full cache, and attention reads the visible
// cells in the same order at the same vector lanes: the logits are the full
// cache's bit for bit on the CPU (tests/runtime/kv_window_test.cpp,
// kv_chunk_test.cpp).
#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/kv_cache.h"

namespace ferrite::runtime {

void KvCache::prepare_window(const int32_t* seq, const int32_t* pos, int64_t n) {
  std::array<int32_t, kMaxSequences> lowest;
  lowest.fill(INT32_MAX);
  std::array<int64_t, kMaxSequences> count{};
  SeqSet batch_seqs;
  for (int64_t t = 0; t < n; ++t) {
    const auto s = static_cast<size_t>(seq[t]);
    lowest[s] = std::min(lowest[s], pos[t]);
    ++count[s];
    batch_seqs.add(seq[t]);
  }
  // A token at p sees positions [reach_.first_visible(p), p]: none of them may be gone.
  for (int s = 0; s < kMaxSequences; ++s) {
    const auto i = static_cast<size_t>(s);
    if (!batch_seqs.has(s) || dropped_[i] < 0 || !reach_.sees(lowest[i], dropped_[i])) continue;
    throw InvalidArgument(std::string(reach_.chunk > 0 ? "chunked-attention" : "sliding-window") +
                          " KV cache: sequence " + std::to_string(s) + " at position " + std::to_string(lowest[i]) +
                          " needs the " + (reach_.chunk > 0 ? "chunk" : "window") + " from position " +
                          std::to_string(std::max<int64_t>(0, reach_.first_visible(lowest[i]))) +
                          ", which the cache dropped (up to " + std::to_string(dropped_[i]) +
                          "); evaluate the sequence again from its start, or keep the whole cache with --swa-full");
  }
  // Drop what no token of the batch, nor any later one, sees.
  for (Cell& c : cells_) {
    if (c.pos < 0) continue;
    c.seqs.for_each_common(batch_seqs, [&](int s) {
      const auto i = static_cast<size_t>(s);
      if (reach_.sees(lowest[i], c.pos)) return;
      dropped_[i] = std::max(dropped_[i], c.pos);
      c.seqs.remove(s);
    });
    if (c.seqs.empty()) {
      c.pos = -1;
      --used_;
    }
  }
  if (!regions_) return;
  for (int s = 0; s < kMaxSequences; ++s) {
    if (batch_seqs.has(s)) make_room(s, count[static_cast<size_t>(s)]);
  }
}

void KvCache::make_room(int seq, int64_t n_new, int64_t offset) {
  int64_t lo = -1, hi = -1;
  for (int64_t i = 0; i < size(); ++i) {
    const Cell& c = cells_[static_cast<size_t>(i)];
    if (c.pos < 0 || !c.has(seq)) continue;
    if (lo < 0) lo = i;
    hi = i + 1;
  }
  if (lo < 0) return;  // a new sequence starts in a free run
  auto is_free = [&](int64_t c) { return cells_[static_cast<size_t>(c)].pos < 0; };
  auto movable = [&](int64_t c) { return is_free(c) || (c >= lo && c < hi && cells_[static_cast<size_t>(c)].has(seq)); };
  bool room = offset < 0 && hi + n_new <= size();
  for (int64_t c = hi; room && c < hi + n_new; ++c) room = is_free(c);
  if (room || (offset >= 0 && lo % kRegionAlign == offset)) return;
  // Layers kept elsewhere move there too, or nothing moves (below).
  if (any_offloaded() && !mover_) return;
  const int64_t need = hi - lo + n_new;
  for (int64_t d = offset >= 0 ? offset : lo % kRegionAlign; d + need <= size(); d += kRegionAlign) {
    if (d == lo) continue;
    bool fits = true;
    for (int64_t c = d; fits && c < d + need; ++c) fits = movable(c);
    if (!fits) continue;
    const int64_t delta = d - lo;
    // Moving down: ascending (each target is below its source); up: descending.
    std::vector<int32_t> from, to;
    for (int64_t k = 0; k < hi - lo; ++k) {
      const int64_t c = delta < 0 ? lo + k : hi - 1 - k;
      const Cell& cell = cells_[static_cast<size_t>(c)];
      if (cell.pos < 0 || !cell.has(seq)) continue;
      move_cell(c, c + delta);
      from.push_back(static_cast<int32_t>(c));
      to.push_back(static_cast<int32_t>(c + delta));
    }
    if (any_offloaded() && !from.empty()) mover_(from, to);  // in the same order
    return;
  }
  // No ordered room: the tokens take free cells wherever they are (the same
  // values, summed in another order).
}

void KvCache::align_window(int seq) {
  if (!window_ || !window_->regions_) return;
  int32_t lowest = INT32_MAX;
  for (const Cell& c : window_->cells_) {
    if (c.pos >= 0 && c.has(seq)) lowest = std::min(lowest, c.pos);
  }
  if (lowest == INT32_MAX) return;
  for (int64_t i = 0; i < size(); ++i) {
    const Cell& c = cells_[static_cast<size_t>(i)];
    if (c.pos == lowest && c.has(seq)) {
      window_->make_room(seq, 0, i % kRegionAlign);
      return;
    }
  }
}

void KvCache::align_sequence(int seq) {
  for (const Cell& c : cells_) {
    if (c.pos >= 0 && c.has(seq)) {
      // The first cell (in cache order) holds the lowest position after a restore.
      int32_t lowest = c.pos;
      for (const Cell& o : cells_) {
        if (o.pos >= 0 && o.has(seq)) lowest = std::min(lowest, o.pos);
      }
      make_room(seq, 0, lowest % kRegionAlign);
      return;
    }
  }
}

void KvCache::move_cell(int64_t from, int64_t to) {
  for (int64_t il = 0; il < n_layer_; ++il) {
    if (!stores(il)) continue;
    if (type_k_ == TensorType::F16) {
      std::memcpy(k_row(il, to), k_row(il, from), static_cast<size_t>(n_embd_kv_) * sizeof(uint16_t));
    } else {
      std::memcpy(k_quant_row(il, to), k_quant_row(il, from), static_cast<size_t>(k_row_bytes_));
    }
    if (type_v_ == TensorType::F16) {
      uint16_t* v = vt(il);
      for (int64_t e = 0; e < n_embd_kv_; ++e) v[e * size() + to] = v[e * size() + from];
    } else {
      std::memcpy(v_quant_row(il, to), v_quant_row(il, from), static_cast<size_t>(v_row_bytes_));
    }
  }
  cells_[static_cast<size_t>(to)] = cells_[static_cast<size_t>(from)];
  cells_[static_cast<size_t>(from)] = Cell{};
}

}  // namespace ferrite::runtime
