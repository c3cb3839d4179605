// A context's LoRA adapters (model/lora_adapter.h) and their scales: one
// default set of scales, and sequences with scales of their own (a server
// slot's request), so that the sequences of one batch use different
// adapter sets. step() gives a forward pass the per-token scales
// (backend/lora.h); the products mix the sets token by token.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/lora.h"
#include "model/lora_adapter.h"

namespace ferrite::runtime {

class LoraState {
 public:
  using Adapters = std::vector<std::shared_ptr<const model::LoraAdapter>>;

  // The adapters (by index: their id) and their default scales (empty: 1
  // each; otherwise one per adapter). Sequences' own scales are dropped.
  // Throws InvalidArgument for a wrong number of scales.
  void set_adapters(Adapters adapters, std::vector<float> scales = {});
  const Adapters& adapters() const { return adapters_; }
  int64_t size() const { return static_cast<int64_t>(adapters_.size()); }

  // Scales of every adapter (one each) for sequence `seq`, or (seq < 0) the
  // default of the sequences without their own. InvalidArgument for a wrong
  // count, a sequence out of range, or a scale that is not finite.
  void set_scales(std::span<const float> scales, int seq = -1);
  // Sequence `seq` back to the default scales.
  void reset_scales(int seq);
  // The scales sequence seq uses (seq < 0: the default).
  const std::vector<float>& scales(int seq = -1) const;

  // The LoRA of a pass over tokens of sequences seq[0, n) whose output rows
  // are out_rows[0, n_out); null when no token uses an adapter. Valid until
  // the next call.
  const backend::LoraStep* step(const int32_t* seq, int64_t n, const int32_t* out_rows, int64_t n_out);

 private:
  Adapters adapters_;
  backend::LoraTable table_;
  std::vector<float> default_;
  std::vector<std::vector<float>> own_;  // [kMaxSequences]: empty = the default
  std::vector<float> token_, out_;
  std::vector<uint8_t> active_;
  backend::LoraStep step_;
};

}  // namespace ferrite::runtime
