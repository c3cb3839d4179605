// Nearest-grid-point search for the IQ lattice types. Every grid entry is a
// tuple of `group` elements, each one of a few level values. A value tuple y
// is first rounded element by element to the nearest levels; when that tuple
// is a grid entry it is the best one (the weighted error is separable), else
// the search tries the entry's precomputed neighbours: the grid entries
// nearest to the rounded tuple (built once per grid, at first use).
#pragma once

#include <cstdint>
#include <vector>

#include "gguf/tensor_type.h"

namespace ferrite::quant {

class IqGrid {
 public:
  static constexpr int kMaxGroup = 8;
  static constexpr int kMaxLevels = 8;

  // The grid of an IQ type (IQ1_M shares IQ1_S's). Built on first call
  // (thread-safe); throws InvalidArgument for a type without a grid.
  static const IqGrid& of(TensorType type);

  int group() const { return group_; }
  int n_entries() const { return n_entries_; }
  int n_levels() const { return n_levels_; }
  float level(int l) const { return level_[l]; }
  float top_level() const { return level_[n_levels_ - 1]; }
  // The `group` level values of entry e.
  const float* values(int e) const { return values_.data() + static_cast<size_t>(e) * group_; }

  // The entry minimising sum_j w_j (y_j - offset - value_j)^2 among the
  // rounded tuple and its neighbours. Writes that error to *err.
  int project(const float* y, const float* w, float offset, float* err) const;

 private:
  IqGrid(const uint8_t* bytes, int n_entries, int group, const float* levels, int n_levels, bool signed_bytes);
  int nearest_level(float v) const;

  int group_ = 0, n_entries_ = 0, n_levels_ = 0;
  float level_[kMaxLevels] = {};
  float mid_[kMaxLevels] = {};        // thresholds between consecutive levels
  std::vector<float> values_;         // [n_entries][group]
  std::vector<int32_t> key_entry_;    // [n_levels^group]: entry >= 0, or -(1 + offset into neighbours_)
  std::vector<uint16_t> neighbours_;  // per off-grid key: count, then entries
};

}  // namespace ferrite::quant
