#include "quant/iq_grid_search.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>

#include "core/error.h"
#include "quant/iq_grids.h"

namespace ferrite::quant {
namespace {

// Off-grid tuples keep at least this many nearest entries (all ties of the
// last distance included, up to kMaxNeighbours).
constexpr int kMinNeighbours = 12;
constexpr int kMaxNeighbours = 48;

constexpr float kIq2Levels[] = {8, 25, 43};
constexpr float kIq3xxsLevels[] = {4, 12, 20, 28, 36, 44, 52, 62};
constexpr float kIq3sLevels[] = {1, 3, 5, 7, 9, 11, 13, 15};
constexpr float kIq1Levels[] = {-1, 0, 1};

template <typename Entry, size_t N>
std::vector<uint8_t> entry_bytes(const std::array<Entry, N>& grid, int group) {
  std::vector<uint8_t> out;
  out.reserve(N * static_cast<size_t>(group));
  for (const Entry e : grid) {
    for (int j = 0; j < group; ++j) out.push_back(static_cast<uint8_t>(static_cast<uint64_t>(e) >> (8 * j)));
  }
  return out;
}

}  // namespace

IqGrid::IqGrid(const uint8_t* bytes, int n_entries, int group, const float* levels, int n_levels, bool signed_bytes)
    : group_(group), n_entries_(n_entries), n_levels_(n_levels) {
  std::copy(levels, levels + n_levels, level_);
  for (int l = 0; l + 1 < n_levels; ++l) mid_[l] = 0.5f * (level_[l] + level_[l + 1]);
  int n_keys = 1;
  for (int j = 0; j < group; ++j) n_keys *= n_levels;

  // Level index tuple -> key; each entry's key.
  values_.resize(static_cast<size_t>(n_entries) * group);
  std::vector<int> entry_key(static_cast<size_t>(n_entries));
  key_entry_.assign(static_cast<size_t>(n_keys), -1);
  for (int e = 0; e < n_entries; ++e) {
    int key = 0;
    for (int j = group - 1; j >= 0; --j) {
      const uint8_t b = bytes[static_cast<size_t>(e) * group + j];
      const float v = signed_bytes ? static_cast<float>(static_cast<int8_t>(b)) : static_cast<float>(b);
      const int l = static_cast<int>(std::find(level_, level_ + n_levels, v) - level_);
      if (l == n_levels) throw InvalidArgument("internal: an IQ grid entry holds a value outside its levels");
      values_[static_cast<size_t>(e) * group + j] = v;
      key = key * n_levels + l;
    }
    entry_key[static_cast<size_t>(e)] = key;
    key_entry_[static_cast<size_t>(key)] = e;
  }

  // Neighbour lists of the off-grid tuples, by squared distance in values
  // (all grid values are integers, so distances are exact integers). Plain
  // loops over raw arrays: this runs for every tuple of every grid once.
  std::vector<int> ivalues(values_.size());
  for (size_t i = 0; i < values_.size(); ++i) ivalues[i] = static_cast<int>(values_[i]);
  std::vector<int> dist_buf(static_cast<size_t>(n_entries));
  int* dist = dist_buf.data();
  const int* iv = ivalues.data();
  int tuple[kMaxGroup];
  int nearest[kMinNeighbours];             // the kMinNeighbours smallest distances, ascending
  int chosen[kMaxNeighbours], chosen_d[kMaxNeighbours];
  for (int key = 0; key < n_keys; ++key) {
    if (key_entry_[static_cast<size_t>(key)] >= 0) continue;
    for (int j = 0, k = key; j < group; ++j, k /= n_levels) tuple[j] = static_cast<int>(level_[k % n_levels]);
    int n_near = 0;
    for (int e = 0; e < n_entries; ++e) {
      const int* v = iv + static_cast<ptrdiff_t>(e) * group;
      int d = 0;
      for (int j = 0; j < group; ++j) d += (tuple[j] - v[j]) * (tuple[j] - v[j]);
      dist[e] = d;
      if (n_near < kMinNeighbours || d < nearest[n_near - 1]) {  // insert into the sorted shortlist
        int pos = n_near < kMinNeighbours ? n_near++ : n_near - 1;
        while (pos > 0 && nearest[pos - 1] > d) {
          nearest[pos] = nearest[pos - 1];
          --pos;
        }
        nearest[pos] = d;
      }
    }
    const int limit = nearest[n_near - 1];
    // Every entry within the limit (ties included), nearest first, capped.
    int count = 0;
    for (int e = 0; e < n_entries; ++e) {
      if (dist[e] > limit) continue;
      int pos = count < kMaxNeighbours ? count++ : kMaxNeighbours;
      if (pos == kMaxNeighbours && dist[e] >= chosen_d[kMaxNeighbours - 1]) continue;
      if (pos == kMaxNeighbours) pos = kMaxNeighbours - 1;
      while (pos > 0 && chosen_d[pos - 1] > dist[e]) {
        chosen_d[pos] = chosen_d[pos - 1];
        chosen[pos] = chosen[pos - 1];
        --pos;
      }
      chosen_d[pos] = dist[e];
      chosen[pos] = e;
    }
    key_entry_[static_cast<size_t>(key)] = -1 - static_cast<int32_t>(neighbours_.size());
    neighbours_.push_back(static_cast<uint16_t>(count));
    for (int i = 0; i < count; ++i) neighbours_.push_back(static_cast<uint16_t>(chosen[i]));
  }
}

const IqGrid& IqGrid::of(TensorType type) {
  switch (type) {
    case TensorType::IQ3_XXS: {
      static const auto bytes = entry_bytes(kIq3xxsGrid, 4);
      static const IqGrid g(bytes.data(), kIq3xxsGridSize, 4, kIq3xxsLevels, 8, false);
      return g;
    }
    case TensorType::IQ3_S: {
      static const auto bytes = entry_bytes(kIq3sGrid, 4);
      static const IqGrid g(bytes.data(), kIq3sGridSize, 4, kIq3sLevels, 8, false);
      return g;
    }
    case TensorType::IQ2_XXS: {
      static const auto bytes = entry_bytes(kIq2xxsGrid, 8);
      static const IqGrid g(bytes.data(), kIq2xxsGridSize, 8, kIq2Levels, 3, false);
      return g;
    }
    case TensorType::IQ2_XS: {
      static const auto bytes = entry_bytes(kIq2xsGrid, 8);
      static const IqGrid g(bytes.data(), kIq2xsGridSize, 8, kIq2Levels, 3, false);
      return g;
    }
    case TensorType::IQ2_S: {
      static const auto bytes = entry_bytes(kIq2sGrid, 8);
      static const IqGrid g(bytes.data(), kIq2sGridSize, 8, kIq2Levels, 3, false);
      return g;
    }
    case TensorType::IQ1_S:
    case TensorType::IQ1_M: {
      static const auto bytes = entry_bytes(kIq1sGrid, 8);
      static const IqGrid g(bytes.data(), kIq1sGridSize, 8, kIq1Levels, 3, true);
      return g;
    }
    default:
      throw InvalidArgument("tensor type " + tensor_type_name(type) + " has no IQ grid");
  }
}

int IqGrid::nearest_level(float v) const {
  int l = 0;
  while (l + 1 < n_levels_ && v > mid_[l]) ++l;
  return l;
}

int IqGrid::project(const float* y, const float* w, float offset, float* err) const {
  int key = 0;
  for (int j = group_ - 1; j >= 0; --j) key = key * n_levels_ + nearest_level(y[j] - offset);
  const int32_t slot = key_entry_[static_cast<size_t>(key)];
  auto error_of = [&](int e) {
    const float* v = values(e);
    float s = 0.0f;
    for (int j = 0; j < group_; ++j) {
      const float diff = y[j] - offset - v[j];
      s += w[j] * diff * diff;
    }
    return s;
  };
  if (slot >= 0) {
    *err = error_of(slot);
    return slot;
  }
  const uint16_t* list = neighbours_.data() + (-1 - slot);
  int best = list[1];
  float best_err = error_of(best);
  for (int i = 2; i <= list[0]; ++i) {
    const float e = error_of(list[i]);
    if (e < best_err) {
      best_err = e;
      best = list[i];
    }
  }
  *err = best_err;
  return best;
}

}  // namespace ferrite::quant
