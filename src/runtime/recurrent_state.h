// The recurrent state of a model's SSM layers (Mamba-2; HParams::is_recurrent),
// kept beside the KV cache (KvCache::recurrent()): per layer, one row per
// state slot of conv [d_conv - 1, conv_ch] and ssm [n_head, head_dim,
// d_state] f32 (backend::RecurrentView). A sequence takes a free slot, zeroed,
// at its first token and gives it back when it is forgotten; a state slot
// summarises every position of its sequence, so it can be dropped or copied
// only whole (KvCache refuses partial removals of such a model).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/forward.h"
#include "model/hparams.h"

namespace ferrite::runtime {

class RecurrentState {
 public:
  static constexpr int kSequences = 256;  // KvCache's kMaxSequences

  // n_slots: sequences that may hold a state at once (the server's slots);
  // InvalidArgument when not positive.
  RecurrentState(const model::HParams& hp, int n_slots);

  int n_slots() const { return static_cast<int>(owner_.size()); }
  int64_t bytes() const;
  // The slot of `seq`, or -1.
  int slot_of(int seq) const { return slot_[static_cast<size_t>(seq)]; }
  // Slots for a batch's tokens (seq[t] in range): sequences without one get a
  // free slot, zeroed. Throws InvalidArgument when more sequences than slots
  // would hold a state (nothing assigned then).
  std::vector<int32_t> assign(const int32_t* seq, int64_t n);
  // Forgets the state of `seq` (its slot becomes free).
  void release(int seq);
  // dst's state becomes a copy of src's (dst takes a slot if it has none;
  // InvalidArgument when none is free). Nothing when src has none: dst is released.
  void copy(int src, int dst);
  void clear();

  // The layers' memory (slot is the caller's).
  model::RecurrentView view();
  // Raw rows of one slot (saving and restoring).
  float* conv_row(int64_t il, int slot) { return conv_[static_cast<size_t>(il)].data() + slot * conv_floats_; }
  float* ssm_row(int64_t il, int slot) { return ssm_[static_cast<size_t>(il)].data() + slot * ssm_floats_; }
  int64_t conv_floats() const { return conv_floats_; }
  int64_t ssm_floats() const { return ssm_floats_; }
  int64_t n_layer() const { return static_cast<int64_t>(conv_.size()); }
  bool has_layer(int64_t il) const { return !conv_[static_cast<size_t>(il)].empty(); }

 private:
  int take_slot(int seq);
  void zero(int slot);

  int64_t conv_floats_, ssm_floats_;
  std::vector<std::vector<float>> conv_, ssm_;  // [n_layer][n_slots * floats], empty for layers without state
  std::array<int, kSequences> slot_{};           // -1: none
  std::vector<int> owner_;                       // [n_slots] the sequence of each slot, -1: free
};

}  // namespace ferrite::runtime
