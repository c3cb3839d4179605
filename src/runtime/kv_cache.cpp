#include "runtime/kv_cache.h"

#include <string>

#include "core/error.h"
#include "model/kv_q8.h"

namespace ferrite::runtime {

namespace {

bool supported(TensorType t) { return t == TensorType::F16 || t == TensorType::Q8_0; }

}  // namespace

KvCache::KvCache(const model::HParams& hp, int64_t n_cells, TensorType type_k, TensorType type_v)
    : type_k_(type_k), type_v_(type_v), n_layer_(hp.n_layer), n_embd_kv_(hp.n_embd_kv()), head_dim_(hp.head_dim) {
  if (n_cells <= 0) throw InvalidArgument("KV cache size must be positive, got " + std::to_string(n_cells));
  for (TensorType t : {type_k, type_v}) {
    if (!supported(t)) {
      throw InvalidArgument("KV cache type " + tensor_type_name(t) + " is not supported (f16, q8_0)");
    }
    if (t == TensorType::Q8_0 && n_embd_kv_ % model::kQ8Block != 0) {
      throw InvalidArgument("a q8_0 KV cache needs a K/V width that is a multiple of 32, this model has " +
                            std::to_string(n_embd_kv_));
    }
  }
  cells_.resize(static_cast<size_t>(n_cells));
  const size_t per_layer = static_cast<size_t>(n_cells) * static_cast<size_t>(n_embd_kv_);
  const size_t per_layer_q8 = static_cast<size_t>(n_cells) * static_cast<size_t>(q8_row_bytes());
  auto alloc = [&](TensorType t, std::vector<std::vector<uint16_t>>& f16, std::vector<std::vector<uint8_t>>& q8) {
    if (t == TensorType::F16) {
      f16.assign(static_cast<size_t>(n_layer_), std::vector<uint16_t>(per_layer, 0));
    } else {
      q8.assign(static_cast<size_t>(n_layer_), std::vector<uint8_t>(per_layer_q8, 0));
    }
  };
  alloc(type_k, k_, kq_);
  alloc(type_v, v_, vq_);
}

int64_t KvCache::q8_row_bytes() const { return n_embd_kv_ / model::kQ8Block * model::kQ8BlockBytes; }

int64_t KvCache::end() const {
  for (int64_t i = size(); i > 0; --i) {
    if (cells_[static_cast<size_t>(i - 1)].pos >= 0) return i;
  }
  return 0;
}

std::vector<int32_t> KvCache::allocate(const int32_t* seq, const int32_t* pos, int64_t n) {
  if (n > size() - used_) {
    throw InvalidArgument("KV cache full: " + std::to_string(n) + " tokens do not fit in " +
                          std::to_string(size() - used_) + " free cells of " + std::to_string(size()));
  }
  for (int64_t t = 0; t < n; ++t) {
    if (seq[t] < 0 || seq[t] >= kMaxSequences) {
      throw InvalidArgument("sequence id " + std::to_string(seq[t]) + " out of range 0.." +
                            std::to_string(kMaxSequences - 1));
    }
    if (pos[t] < 0) throw InvalidArgument("negative position " + std::to_string(pos[t]));
  }
  std::vector<int32_t> slots(static_cast<size_t>(n));
  int64_t next = 0;
  for (int64_t t = 0; t < n; ++t) {
    while (cells_[static_cast<size_t>(next)].pos >= 0) ++next;
    Cell& c = cells_[static_cast<size_t>(next)];
    c.pos = pos[t];
    c.seqs = uint64_t{1} << seq[t];
    slots[static_cast<size_t>(t)] = static_cast<int32_t>(next);
    ++used_;
  }
  return slots;
}

void KvCache::remove(int seq, int32_t p0, int32_t p1) {
  for (Cell& c : cells_) {
    if (c.pos < 0 || c.pos < p0 || (p1 >= 0 && c.pos >= p1)) continue;
    if (seq < 0) {
      c.seqs = 0;
    } else if (seq < kMaxSequences) {
      c.seqs &= ~(uint64_t{1} << seq);
    }
    if (c.seqs == 0) {
      c.pos = -1;
      --used_;
    }
  }
}

void KvCache::copy_sequence(int src, int dst) {
  if (src < 0 || src >= kMaxSequences || dst < 0 || dst >= kMaxSequences) {
    throw InvalidArgument("sequence id out of range");
  }
  for (Cell& c : cells_) {
    if (c.pos >= 0 && c.has(src)) c.seqs |= uint64_t{1} << dst;
  }
}

void KvCache::clear() {
  for (Cell& c : cells_) c = Cell{};
  used_ = 0;
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
    if (type_k_ == TensorType::F16) {
      l.k = k_[static_cast<size_t>(il)].data();
    } else {
      l.k_q8 = kq_[static_cast<size_t>(il)].data();
    }
    if (type_v_ == TensorType::F16) {
      l.vt = v_[static_cast<size_t>(il)].data();
    } else {
      l.v_q8 = vq_[static_cast<size_t>(il)].data();
    }
  }
  return v;
}

}  // namespace ferrite::runtime
