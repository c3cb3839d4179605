#include "runtime/recurrent_state.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace ferrite::runtime {

RecurrentState::RecurrentState(const model::HParams& hp, int n_slots)
    : conv_floats_(hp.ssm_conv_floats()), ssm_floats_(hp.ssm_state_floats()) {
  if (n_slots < 1 || n_slots > kSequences) {
    throw InvalidArgument("recurrent state slots must be 1.." + std::to_string(kSequences) + ", got " +
                          std::to_string(n_slots));
  }
  slot_.fill(-1);
  owner_.assign(static_cast<size_t>(n_slots), -1);
  conv_.resize(static_cast<size_t>(hp.n_layer));
  ssm_.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    if (!hp.is_recurrent(il)) continue;
    conv_[static_cast<size_t>(il)].assign(static_cast<size_t>(n_slots * conv_floats_), 0.0f);
    ssm_[static_cast<size_t>(il)].assign(static_cast<size_t>(n_slots * ssm_floats_), 0.0f);
  }
}

int64_t RecurrentState::bytes() const {
  int64_t b = 0;
  for (size_t il = 0; il < conv_.size(); ++il) {
    b += static_cast<int64_t>((conv_[il].size() + ssm_[il].size()) * sizeof(float));
  }
  return b;
}

void RecurrentState::zero(int slot) {
  for (int64_t il = 0; il < n_layer(); ++il) {
    if (!has_layer(il)) continue;
    std::fill_n(conv_row(il, slot), conv_floats_, 0.0f);
    std::fill_n(ssm_row(il, slot), ssm_floats_, 0.0f);
  }
}

int RecurrentState::take_slot(int seq) {
  auto free = std::find(owner_.begin(), owner_.end(), -1);
  if (free == owner_.end()) {
    throw InvalidArgument("a recurrent model keeps a state for at most " + std::to_string(n_slots()) +
                          " sequences at once (n_seq_max / --parallel); sequence " + std::to_string(seq) +
                          " has none free");
  }
  const int s = static_cast<int>(free - owner_.begin());
  owner_[static_cast<size_t>(s)] = seq;
  slot_[static_cast<size_t>(seq)] = s;
  zero(s);
  return s;
}

std::vector<int32_t> RecurrentState::assign(const int32_t* seq, int64_t n) {
  int needed = 0;
  std::array<bool, kSequences> counted{};
  for (int64_t t = 0; t < n; ++t) {
    const auto s = static_cast<size_t>(seq[t]);
    if (slot_[s] < 0 && !counted[s]) {
      counted[s] = true;
      ++needed;
    }
  }
  const auto n_free = std::count(owner_.begin(), owner_.end(), -1);
  if (needed > n_free) {
    throw InvalidArgument("a recurrent model keeps a state for at most " + std::to_string(n_slots()) +
                          " sequences at once (n_seq_max / --parallel); this batch needs " + std::to_string(needed) +
                          " more");
  }
  std::vector<int32_t> slots(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    int s = slot_[static_cast<size_t>(seq[t])];
    if (s < 0) s = take_slot(seq[t]);
    slots[static_cast<size_t>(t)] = s;
  }
  return slots;
}

void RecurrentState::release(int seq) {
  int& s = slot_[static_cast<size_t>(seq)];
  if (s >= 0) owner_[static_cast<size_t>(s)] = -1;
  s = -1;
}

void RecurrentState::copy(int src, int dst) {
  if (src == dst) return;
  const int from = slot_[static_cast<size_t>(src)];
  if (from < 0) {
    release(dst);
    return;
  }
  int to = slot_[static_cast<size_t>(dst)];
  if (to < 0) to = take_slot(dst);
  for (int64_t il = 0; il < n_layer(); ++il) {
    if (!has_layer(il)) continue;
    std::copy_n(conv_row(il, from), conv_floats_, conv_row(il, to));
    std::copy_n(ssm_row(il, from), ssm_floats_, ssm_row(il, to));
  }
}

void RecurrentState::clear() {
  slot_.fill(-1);
  std::fill(owner_.begin(), owner_.end(), -1);
}

model::RecurrentView RecurrentState::view() {
  model::RecurrentView v;
  v.layers.resize(conv_.size());
  for (size_t il = 0; il < conv_.size(); ++il) {
    if (conv_[il].empty()) continue;
    v.layers[il].conv = conv_[il].data();
    v.layers[il].ssm = ssm_[il].data();
  }
  return v;
}

}  // namespace ferrite::runtime
