// KvCache::copy_cells: one sequence's cells of a range of positions copied
// into new cells of another (the server's prefix cache: a prompt that starts
// as another slot's cache does takes those keys and values instead of
// evaluating them again). The copies are the destination's own cells, so a
// later context shift or removal in either sequence leaves the other alone
// (cells shared through copy_sequence would move for both).
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "runtime/kv_cache.h"

namespace ferrite::runtime {

int64_t KvCache::copy_cells(int src, int dst, int32_t p0, int32_t p1, const CellCopier& offloaded,
                            const CellCopier& offloaded_window) {
  if (src < 0 || src >= kMaxSequences || dst < 0 || dst >= kMaxSequences) {
    throw InvalidArgument("sequence id out of range");
  }
  if (src == dst) throw InvalidArgument("copy_cells: source and destination are the same sequence");
  if (p0 < 0 || p1 < p0) throw InvalidArgument("copy_cells: bad position range");
  // (position, cell) of src in [p0, p1), by position.
  std::vector<std::pair<int32_t, int32_t>> from;
  for (int64_t i = 0; i < size(); ++i) {
    const Cell& c = cells_[static_cast<size_t>(i)];
    if (c.pos < 0 || c.pos < p0 || c.pos >= p1) continue;
    if (c.has(dst)) throw InvalidArgument("copy_cells: the destination already holds position " + std::to_string(c.pos));
    if (c.has(src)) from.emplace_back(c.pos, static_cast<int32_t>(i));
  }
  std::sort(from.begin(), from.end());
  const auto n = static_cast<int64_t>(from.size());
  if (n == 0) return 0;
  if (recurrent_) {
    // Only a whole sequence, into one that has none: the state goes with it.
    check_recurrent_range(src, p0, p1, "copy");
    if (max_pos(dst) >= 0) throw InvalidArgument("copy_cells: a recurrent model copies only into an empty sequence");
  }
  std::vector<int32_t> seq(static_cast<size_t>(n), dst), pos(static_cast<size_t>(n)), src_cells(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    pos[static_cast<size_t>(i)] = from[static_cast<size_t>(i)].first;
    src_cells[static_cast<size_t>(i)] = from[static_cast<size_t>(i)].second;
  }
  // Throws when full (nothing claimed).
  const std::vector<int32_t> dst_cells = allocate_cells(seq.data(), pos.data(), n);

  bool any_offloaded = false;
  for (int64_t il = 0; il < n_layer_; ++il) {
    const auto l = static_cast<size_t>(il);
    if (!stores(il)) {
      any_offloaded = any_offloaded || offloaded_[l];
      continue;
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t s = src_cells[static_cast<size_t>(i)], d = dst_cells[static_cast<size_t>(i)];
      if (type_k_ == TensorType::F16) {
        std::memcpy(k_row(il, d), k_row(il, s), static_cast<size_t>(n_embd_kv_) * sizeof(uint16_t));
      } else {
        std::memcpy(k_quant_row(il, d), k_quant_row(il, s), static_cast<size_t>(k_row_bytes_));
      }
      if (type_v_ == TensorType::F16) {
        uint16_t* vt_l = vt(il);  // transposed: element (cell, dim) at dim * n_cells + cell
        for (int64_t e = 0; e < n_embd_kv_; ++e) vt_l[e * size() + d] = vt_l[e * size() + s];
      } else {
        std::memcpy(v_quant_row(il, d), v_quant_row(il, s), static_cast<size_t>(v_row_bytes_));
      }
    }
  }
  if (any_offloaded) {
    if (!offloaded) {
      remove(dst, p0, p1);  // nothing half done
      throw InvalidArgument("copy_cells: layers kept elsewhere and no way to copy them");
    }
    try {
      offloaded(src_cells, dst_cells);
    } catch (...) {
      remove(dst, p0, p1);  // nothing half done
      throw;
    }
  }
  if (window_) {
    // The window's cells of the range (those it still holds); what the
    // source dropped in the range the destination lacks too.
    try {
      window_->copy_cells(src, dst, p0, p1, offloaded_window);
    } catch (...) {
      remove(dst, p0, p1);
      throw;
    }
    const int32_t src_dropped = window_->dropped_[static_cast<size_t>(src)];
    int32_t& d = window_->dropped_[static_cast<size_t>(dst)];
    if (src_dropped >= p0) d = std::max(d, std::min(src_dropped, p1 - 1));
    align_window(dst);
  }
  if (recurrent_) {
    try {
      recurrent_->copy(src, dst);
    } catch (...) {
      remove(dst, p0, p1);
      throw;
    }
  }
  return n;
}

}  // namespace ferrite::runtime
