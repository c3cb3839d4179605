#include "runtime/kv_cache.h"

#include <algorithm>
#include <array>
#include <bit>
#include <string>
#include <utility>

#include "core/error.h"
#include "model/kv_quant.h"

namespace ferrite::runtime {

namespace {

bool supported(TensorType t) {
  return t == TensorType::F16 || model::kv_float_row(t) || model::kv_quant_supported(t);
}

}  // namespace

TensorType cache_type_from_name(const std::string& name, const std::string& option) {
  const auto t = tensor_type_from_name(name);
  if (!t || !supported(*t)) {
    throw InvalidArgument(option + ": unsupported KV cache type '" + name + "' (" + kCacheTypeNames + ")");
  }
  return *t;
}

KvCache::KvCache(const model::HParams& hp, int64_t n_cells, TensorType type_k, TensorType type_v,
                 int64_t n_storage_layers, int64_t window_cells, int n_state_slots)
    : type_k_(type_k), type_v_(type_v), n_layer_(hp.n_layer), n_embd_kv_(hp.n_embd_kv()), head_dim_(hp.head_dim) {
  if (n_cells <= 0) throw InvalidArgument("KV cache size must be positive, got " + std::to_string(n_cells));
  for (TensorType t : {type_k, type_v}) {
    if (!supported(t)) {
      throw InvalidArgument("KV cache type " + tensor_type_name(t) + " is not supported (" + kCacheTypeNames + ")");
    }
    if (model::kv_quant_supported(t) && n_embd_kv_ % model::kKvQuantBlock != 0) {
      throw InvalidArgument("a " + tensor_type_name(t) +
                            " KV cache needs a K/V width that is a multiple of 32, this model has " +
                            std::to_string(n_embd_kv_));
    }
  }
  cells_.resize(static_cast<size_t>(n_cells));
  const bool windowed = window_cells > 0 && window_cells < n_cells && hp.has_swa_layers();
  const int64_t n_stored = n_storage_layers < 0 ? n_layer_ : std::min(n_storage_layers, n_layer_);
  if (windowed) window_.reset(new KvCache(WindowTag{}, hp, window_cells, type_k, type_v, n_stored));
  std::vector<bool> stored(static_cast<size_t>(n_layer_));
  offloaded_.assign(static_cast<size_t>(n_layer_), false);
  for (int64_t il = 0; il < n_layer_; ++il) {
    // The layers of limited reach of a window cache are the window's (stored or offloaded there).
    const bool here = !hp.is_recurrent(il) && !(windowed && hp.is_swa(il));
    stored[static_cast<size_t>(il)] = here && il < n_stored;
    offloaded_[static_cast<size_t>(il)] = here && il >= n_stored;
  }
  allocate_storage(stored);
  if (hp.has_recurrent_layers()) recurrent_ = std::make_unique<RecurrentState>(hp, n_state_slots);
}

KvCache::KvCache(WindowTag, const model::HParams& hp, int64_t n_cells, TensorType type_k, TensorType type_v,
                 int64_t n_stored)
    : type_k_(type_k), type_v_(type_v), n_layer_(hp.n_layer), n_embd_kv_(hp.n_embd_kv()), head_dim_(hp.head_dim),
      reach_(hp.reach()) {
  cells_.resize(static_cast<size_t>(n_cells));
  std::vector<bool> stored(static_cast<size_t>(n_layer_));
  offloaded_.assign(static_cast<size_t>(n_layer_), false);
  for (int64_t il = 0; il < n_layer_; ++il) {
    stored[static_cast<size_t>(il)] = hp.is_swa(il) && il < n_stored;
    offloaded_[static_cast<size_t>(il)] = hp.is_swa(il) && il >= n_stored;
  }
  allocate_storage(stored);
}

bool KvCache::any_offloaded() const {
  return std::find(offloaded_.begin(), offloaded_.end(), true) != offloaded_.end();
}

void KvCache::set_movers(CellCopier mover, CellCopier window_mover) {
  mover_ = std::move(mover);
  if (window_) window_->mover_ = std::move(window_mover);
}

void KvCache::allocate_storage(const std::vector<bool>& stored) {
  if (type_k_ != TensorType::F16) k_row_bytes_ = model::kv_quant_row_bytes(type_k_, n_embd_kv_);
  if (type_v_ != TensorType::F16) v_row_bytes_ = model::kv_quant_row_bytes(type_v_, n_embd_kv_);
  const size_t per_layer = cells_.size() * static_cast<size_t>(n_embd_kv_);
  auto alloc = [&](TensorType t, int64_t row_bytes, std::vector<std::vector<uint16_t>>& f16,
                   std::vector<std::vector<uint8_t>>& quantized) {
    if (t == TensorType::F16) {
      f16.resize(static_cast<size_t>(n_layer_));
      for (size_t il = 0; il < f16.size(); ++il) {
        if (stored[il]) f16[il].assign(per_layer, 0);
      }
    } else {
      const size_t bytes = cells_.size() * static_cast<size_t>(row_bytes);
      quantized.resize(static_cast<size_t>(n_layer_));
      for (size_t il = 0; il < quantized.size(); ++il) {
        if (stored[il]) quantized[il].assign(bytes, 0);
      }
    }
  };
  alloc(type_k_, k_row_bytes_, k_, kq_);
  alloc(type_v_, v_row_bytes_, v_, vq_);
}

bool KvCache::stores(int64_t il) const {
  const auto l = static_cast<size_t>(il);
  if (il < 0 || il >= n_layer_) return false;
  return type_k_ == TensorType::F16 ? !k_[l].empty() : !kq_[l].empty();
}

int64_t KvCache::bytes() const {
  int64_t b = 0;
  for (const auto& l : k_) b += static_cast<int64_t>(l.size() * sizeof(uint16_t));
  for (const auto& l : v_) b += static_cast<int64_t>(l.size() * sizeof(uint16_t));
  for (const auto& l : kq_) b += static_cast<int64_t>(l.size());
  for (const auto& l : vq_) b += static_cast<int64_t>(l.size());
  return b + (window_ ? window_->bytes() : 0);
}

int64_t KvCache::planned_bytes(const model::HParams& hp, int64_t n_cells, TensorType type_k, TensorType type_v,
                               int64_t window_cells) {
  const int64_t nk = hp.n_embd_kv();
  auto row = [&](TensorType t) { return t == TensorType::F16 ? nk * 2 : model::kv_quant_row_bytes(t, nk); };
  const bool windowed = window_cells > 0 && window_cells < n_cells && hp.has_swa_layers();
  int64_t b = 0;
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    if (hp.is_recurrent(il)) continue;  // a state, not K/V (RecurrentState::bytes)
    b += (windowed && hp.is_swa(il) ? window_cells : n_cells) * (row(type_k) + row(type_v));
  }
  return b;
}

int64_t KvCache::window_size(int64_t n_swa, int64_t n_seq, int64_t n_ubatch, int64_t n_ctx) {
  constexpr int64_t kWindowPad = 256;
  const int64_t want = std::min(n_ctx, n_swa * std::max<int64_t>(n_seq, 1) + n_ubatch);
  return (want + kWindowPad - 1) / kWindowPad * kWindowPad;
}

bool KvCache::can_continue(int seq, int32_t pos) const {
  // A recurrent state holds every position it has seen: only its end (or a fresh start) continues it.
  if (recurrent_ && seq >= 0 && seq < kMaxSequences && pos != 0 && pos != max_pos(seq) + 1) return false;
  if (!window_ || seq < 0 || seq >= kMaxSequences) return true;
  const int32_t dropped = window_->dropped_[static_cast<size_t>(seq)];
  return dropped < 0 || !window_->reach_.sees(pos, dropped);
}

int64_t KvCache::end() const {
  for (int64_t i = size(); i > 0; --i) {
    if (cells_[static_cast<size_t>(i - 1)].pos >= 0) return i;
  }
  return 0;
}

void KvCache::validate(const int32_t* seq, const int32_t* pos, int64_t n) const {
  if (n > size() - used_) {
    throw InvalidArgument(std::string(reach_.limited() ? "KV cache window full: " : "KV cache full: ") +
                          std::to_string(n) + " tokens do not fit in " + std::to_string(size() - used_) +
                          " free cells of " + std::to_string(size()));
  }
  for (int64_t t = 0; t < n; ++t) {
    if (seq[t] < 0 || seq[t] >= kMaxSequences) {
      throw InvalidArgument("sequence id " + std::to_string(seq[t]) + " out of range 0.." +
                            std::to_string(kMaxSequences - 1));
    }
    if (pos[t] < 0) throw InvalidArgument("negative position " + std::to_string(pos[t]));
  }
}

std::vector<int32_t> KvCache::allocate(const int32_t* seq, const int32_t* pos, int64_t n) {
  validate(seq, pos, n);
  if (recurrent_) {
    check_recurrent_batch(seq, pos, n);
    recurrent_slots_ = recurrent_->assign(seq, n);  // throws before any cell is claimed
    try {
      return allocate_cells(seq, pos, n);  // (no window: SSM families have no sliding layers)
    } catch (...) {
      release_empty_states();
      throw;
    }
  }
  if (!window_) return allocate_cells(seq, pos, n);
  window_->prepare_window(seq, pos, n);
  std::vector<int32_t> slots = allocate_cells(seq, pos, n);
  // A sequence that has no cell left in the window (a chunk's first token,
  // or a sequence's) starts there at the offset modulo kRegionAlign of its
  // first token's cell here, so that the window's cells keep these cells'
  // vector lanes (the whole cache's summation order).
  window_->lane_.fill(-1);
  for (int64_t t = n - 1; t >= 0; --t) {
    window_->lane_[static_cast<size_t>(seq[t])] = static_cast<int8_t>(slots[static_cast<size_t>(t)] % kRegionAlign);
  }
  try {
    window_slots_ = window_->allocate_cells(seq, pos, n);
    window_->lane_.fill(-1);
  } catch (...) {
    window_->lane_.fill(-1);
    for (int32_t c : slots) cells_[static_cast<size_t>(c)] = Cell{};
    used_ -= n;
    throw;
  }
  return slots;
}

std::vector<int32_t> KvCache::allocate_cells(const int32_t* seq, const int32_t* pos, int64_t n) {
  validate(seq, pos, n);
  SeqSet batch_seqs;
  for (int64_t t = 0; t < n; ++t) batch_seqs.add(seq[t]);
  // One past the highest cell of each sequence of the batch (-1: none).
  std::array<int64_t, kMaxSequences> next{};
  next.fill(-1);
  if (regions_) {
    for (int64_t i = 0; i < size(); ++i) {
      const Cell& c = cells_[static_cast<size_t>(i)];
      if (c.pos >= 0) c.seqs.for_each_common(batch_seqs, [&](int s) { next[static_cast<size_t>(s)] = i + 1; });
    }
  }
  std::vector<int32_t> slots(static_cast<size_t>(n));
  int64_t first_free = 0;
  for (int64_t t = 0; t < n; ++t) {
    int64_t cell = -1;
    if (regions_) {
      int64_t& hint = next[static_cast<size_t>(seq[t])];
      cell = next_cell(seq[t], hint);
      hint = cell + 1;
    } else {
      while (cells_[static_cast<size_t>(first_free)].pos >= 0) ++first_free;
      cell = first_free;
    }
    Cell& c = cells_[static_cast<size_t>(cell)];
    c.pos = pos[t];
    c.seqs = SeqSet::only(seq[t]);
    slots[static_cast<size_t>(t)] = static_cast<int32_t>(cell);
    ++used_;
  }
  return slots;
}

int64_t KvCache::next_cell(int seq, int64_t hint) const {
  const int64_t home = home_[static_cast<size_t>(seq)];
  const int64_t len = home_len_[static_cast<size_t>(seq)];
  if (home >= 0 && len > 0) {
    // Within the home region: after the highest cell, then from its start.
    const int64_t end = std::min(size(), home + len);
    const int64_t from = hint >= home && hint < end ? hint : home;
    for (int64_t k = 0; k < end - home; ++k) {
      const int64_t c = home + (from - home + k) % (end - home);
      if (cells_[static_cast<size_t>(c)].pos < 0) return c;
    }
  }
  if (hint >= 0) return free_from(hint);
  const int64_t start = home >= 0 ? free_from(home) : region_start();
  const int8_t lane = lane_[static_cast<size_t>(seq)];
  if (lane < 0) return start;
  // The first free cell from start at that offset, when it has one.
  for (int64_t c = start + (lane - start % kRegionAlign + kRegionAlign) % kRegionAlign; c < size(); c += kRegionAlign) {
    if (cells_[static_cast<size_t>(c)].pos < 0) return c;
  }
  return start;
}

int64_t KvCache::free_from(int64_t i) const {
  const int64_t n = size();
  for (int64_t k = 0; k < n; ++k) {
    const int64_t c = (i + k) % n;
    if (cells_[static_cast<size_t>(c)].pos < 0) return c;
  }
  throw InvalidArgument("KV cache full");  // unreachable: allocate checked the free count
}

void KvCache::set_sequence_home(int seq, int64_t cell, int64_t length) {
  if (seq < 0 || seq >= kMaxSequences) throw InvalidArgument("sequence id " + std::to_string(seq) + " out of range");
  if (cell < -1 || cell >= size()) throw InvalidArgument("home cell " + std::to_string(cell) + " outside the cache");
  if (length < 0) throw InvalidArgument("negative home length " + std::to_string(length));
  home_[static_cast<size_t>(seq)] = cell;
  home_len_[static_cast<size_t>(seq)] = cell < 0 ? 0 : length;
  if (window_) {
    // The same share of the window, as a start only (the window's cells move).
    const int64_t w = cell < 0 ? -1 : cell * window_->size() / size() / kRegionAlign * kRegionAlign;
    window_->set_sequence_home(seq, w);
  }
}

int64_t KvCache::region_start() const {
  // The largest run of free cells; a new sequence starts at its beginning
  // when it opens the cache, else in its middle (on a kRegionAlign boundary),
  // so that the sequence before the run keeps room to grow.
  int64_t best_begin = -1, best_len = 0;
  for (int64_t i = 0; i < size();) {
    if (cells_[static_cast<size_t>(i)].pos >= 0) {
      ++i;
      continue;
    }
    int64_t j = i;
    while (j < size() && cells_[static_cast<size_t>(j)].pos < 0) ++j;
    if (j - i > best_len) {
      best_begin = i;
      best_len = j - i;
    }
    i = j;
  }
  if (best_begin <= 0) return std::max<int64_t>(best_begin, 0);
  const int64_t mid = (best_begin + best_len / 2) / kRegionAlign * kRegionAlign;
  return mid >= best_begin ? mid : best_begin;
}

void KvCache::remove(int seq, int32_t p0, int32_t p1) {
  if (recurrent_) check_recurrent_range(seq, p0, p1, "remove");
  for (Cell& c : cells_) {
    if (c.pos < 0 || c.pos < p0 || (p1 >= 0 && c.pos >= p1)) continue;
    if (seq < 0) {
      c.seqs.clear();
    } else if (seq < kMaxSequences) {
      c.seqs.remove(seq);
    }
    if (c.seqs.empty()) {
      c.pos = -1;
      --used_;
    }
  }
  if (recurrent_) release_empty_states();
  if (!window_) return;
  window_->remove(seq, p0, p1);
  // A sequence with no cells left starts afresh: nothing of it was dropped.
  std::array<bool, kMaxSequences> present{};
  SeqSet all;
  for (int s = 0; s < kMaxSequences; ++s) all.add(s);
  for (const Cell& c : cells_) {
    if (c.pos >= 0) c.seqs.for_each_common(all, [&](int s) { present[static_cast<size_t>(s)] = true; });
  }
  for (int s = 0; s < kMaxSequences; ++s) {
    if (!present[static_cast<size_t>(s)]) window_->dropped_[static_cast<size_t>(s)] = -1;
  }
}

void KvCache::copy_sequence(int src, int dst) {
  if (src < 0 || src >= kMaxSequences || dst < 0 || dst >= kMaxSequences) {
    throw InvalidArgument("sequence id out of range");
  }
  for (Cell& c : cells_) {
    if (c.pos >= 0 && c.has(src)) c.seqs.add(dst);
  }
  if (recurrent_) recurrent_->copy(src, dst);
  if (window_) {
    window_->copy_sequence(src, dst);
    int32_t& d = window_->dropped_[static_cast<size_t>(dst)];
    d = std::max(d, window_->dropped_[static_cast<size_t>(src)]);
  }
}

void KvCache::clear() {
  for (Cell& c : cells_) c = Cell{};
  used_ = 0;
  dropped_ = make_dropped();
  if (window_) window_->clear();
  if (recurrent_) recurrent_->clear();
}

int32_t KvCache::max_pos(int seq) const {
  int32_t best = -1;
  for (const Cell& c : cells_) {
    if (c.pos >= 0 && seq >= 0 && seq < kMaxSequences && c.has(seq) && c.pos > best) best = c.pos;
  }
  return best;
}

model::KvView KvCache::view() {
  model::KvView v;
  v.n_cells = size();
  v.layers.resize(static_cast<size_t>(n_layer_));
  for (int64_t il = 0; il < n_layer_; ++il) {
    model::KvLayer& l = v.layers[static_cast<size_t>(il)];
    if (!stores(il)) continue;  // not stored here (another backend's, or the window's)
    l.k_type = type_k_;
    l.v_type = type_v_;
    if (type_k_ == TensorType::F16) {
      l.k = k_[static_cast<size_t>(il)].data();
    } else {
      l.k_q = kq_[static_cast<size_t>(il)].data();
    }
    if (type_v_ == TensorType::F16) {
      l.vt = v_[static_cast<size_t>(il)].data();
    } else {
      l.v_q = vq_[static_cast<size_t>(il)].data();
    }
  }
  return v;
}

}  // namespace ferrite::runtime
