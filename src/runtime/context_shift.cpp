// Context::shift_sequence: each layer's RoPE settings (model/layer_rope.h)
// for KvCache::shift; layers offloaded to the GPU rotate their keys there
// (backend::Backend::rotate_cached_keys) with the same row code.
// Context::copy_range: KvCache::copy_cells, the GPU's layers through
// backend::Backend::copy_cached_cells (copy_window_cells: a window's).
#include <vector>

#include "core/error.h"
#include "model/layer_rope.h"
#include "runtime/context.h"

namespace ferrite::runtime {

void Context::shift_sequence(int seq, int32_t p0, int32_t p1, int32_t delta) {
  if (model_->arch().is_encoder()) throw InvalidArgument("encoder models have no cache to shift");
  const int64_t n_layer = model_->hparams().n_layer;
  std::vector<cpu::RopeConfig> ropes;
  ropes.reserve(static_cast<size_t>(n_layer));
  for (int64_t il = 0; il < n_layer; ++il) ropes.push_back(model::layer_rope(*model_, il, cache_.size()));
  KvCache::KeyRotator offloaded;
  if (gpu_) {
    offloaded = [this](int64_t layer, std::span<const int32_t> cells, const KvCache::RowRotation& rotate) {
      gpu_->rotate_cached_keys(layer, cells, rotate);
    };
  }
  cache_.shift(seq, p0, p1, delta, ropes, offloaded);
}

int64_t Context::copy_range(int src, int dst, int32_t p0, int32_t p1) {
  if (model_->arch().is_encoder()) throw InvalidArgument("encoder models have no cache to copy");
  KvCache::CellCopier offloaded, offloaded_window;
  if (gpu_) {
    offloaded = [this](std::span<const int32_t> from, std::span<const int32_t> to) {
      gpu_->copy_cached_cells(from, to);
    };
    offloaded_window = [this](std::span<const int32_t> from, std::span<const int32_t> to) {
      gpu_->copy_window_cells(from, to);
    };
  }
  return cache_.copy_cells(src, dst, p0, p1, offloaded, offloaded_window);
}

}  // namespace ferrite::runtime
