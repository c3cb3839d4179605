// The CUDA backend's cache cells between steps: a context shift's key
// rotation (rotate_cached_keys), the runtime's copies and moves of cells
// (copy_cached_cells; copy_window_cells for a window cache's cells, which
// the window moves before a pass: its CPU twin is KvCache::move_cell) and
// the rows of saved sequences (read_cached_rows, write_cached_rows).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cuda/backend/cuda_backend.h"
#include "cuda/kernels/check.h"

namespace ferrite::cuda {

void CudaBackend::rotate_cached_keys(int64_t layer, std::span<const int32_t> cells,
                                     const std::function<void(uint8_t* row)>& rotate) {
  if (layer < first_layer_ || layer >= dims_.n_layer) {
    throw InvalidArgument("layer " + std::to_string(layer) + " keeps its keys on the CPU");
  }
  if (in_window_[static_cast<size_t>(layer - first_layer_)]) {
    throw InvalidArgument("layer " + std::to_string(layer) + " keeps a sliding window's cells, which do not shift");
  }
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // no step in flight reads the rows
  uint8_t* base = k_cache_[static_cast<size_t>(layer - first_layer_)].as<uint8_t>();
  const size_t row = static_cast<size_t>(k_ref_.row_bytes);
  std::vector<uint8_t> host;
  // Each run of consecutive cells in one copy each way.
  for (size_t i = 0; i < cells.size();) {
    size_t j = i + 1;
    while (j < cells.size() && cells[j] == cells[j - 1] + 1) ++j;
    const size_t n = j - i;
    if (cells[i] < 0 || static_cast<int64_t>(cells[i]) + static_cast<int64_t>(n) > n_cells_) {
      throw InvalidArgument("context shift: cell " + std::to_string(cells[i]) + " outside the GPU cache");
    }
    uint8_t* dev = base + static_cast<size_t>(cells[i]) * row;
    host.resize(n * row);
    FERRITE_CUDA_CHECK(cudaMemcpy(host.data(), dev, n * row, cudaMemcpyDeviceToHost));
    for (size_t r = 0; r < n; ++r) rotate(host.data() + r * row);
    FERRITE_CUDA_CHECK(cudaMemcpy(dev, host.data(), n * row, cudaMemcpyHostToDevice));
    i = j;
  }
}

void CudaBackend::copy_cached_cells(std::span<const int32_t> from, std::span<const int32_t> to) {
  copy_cells(false, from, to);
}

void CudaBackend::copy_window_cells(std::span<const int32_t> from, std::span<const int32_t> to) {
  if (n_window_cells_ == 0) throw InvalidArgument("copy_window_cells: the GPU backend has no window cache");
  copy_cells(true, from, to);
}

void CudaBackend::copy_cells(bool window, std::span<const int32_t> from, std::span<const int32_t> to) {
  const char* what = window ? "copy_window_cells" : "copy_cached_cells";
  if (from.size() != to.size()) throw InvalidArgument(std::string(what) + ": " + std::to_string(from.size()) +
                                                      " source cells for " + std::to_string(to.size()));
  const int64_t cells = window ? n_window_cells_ : n_cells_;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] < 0 || from[i] >= cells || to[i] < 0 || to[i] >= cells) {
      throw InvalidArgument(std::string(what) + ": cell outside the GPU cache");
    }
  }
  // Runs of consecutive cells on both sides (ascending or descending, one
  // distance apart) in one copy per layer and side, cut into pieces no longer
  // than the distance so that no copy overlaps itself; in list order, as
  // cell-by-cell copies would go (a cell copied to may be copied from later).
  for (size_t i = 0; i < from.size();) {
    const int64_t delta = int64_t{to[i]} - from[i];
    const int dir = i + 1 < from.size() && from[i + 1] == from[i] - 1 ? -1 : 1;
    size_t j = i + 1;
    while (j < from.size() && from[j] == from[j - 1] + dir && int64_t{to[j]} - from[j] == delta) ++j;
    const size_t piece = delta == 0 ? j - i : std::min<size_t>(j - i, static_cast<size_t>(std::llabs(delta)));
    for (size_t at = i; delta != 0 && at < j; at += piece) {
      const size_t n = std::min(piece, j - at);
      const int64_t lo = dir > 0 ? from[at] : from[at + n - 1];  // the piece's lowest source cell
      for (size_t l = 0; l < k_cache_.size(); ++l) {
        if (in_window_[l] != window) continue;
        for (auto [buf, row] : {std::pair{&k_cache_[l], k_ref_.row_bytes}, std::pair{&v_cache_[l], v_ref_.row_bytes}}) {
          uint8_t* base = buf->as<uint8_t>();
          const auto r = static_cast<size_t>(row);
          FERRITE_CUDA_CHECK(cudaMemcpyAsync(base + static_cast<size_t>(lo + delta) * r, base + static_cast<size_t>(lo) * r,
                                             n * r, cudaMemcpyDeviceToDevice, stream_));
        }
      }
    }
    i = j;
  }
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::read_cached_rows(int64_t layer, std::span<const int32_t> cells, uint8_t* k, uint8_t* v) {
  transfer_rows(layer, cells, k, v, false);
}

void CudaBackend::write_cached_rows(int64_t layer, std::span<const int32_t> cells, const uint8_t* k,
                                    const uint8_t* v) {
  // (to_device only reads k and v)
  transfer_rows(layer, cells, const_cast<uint8_t*>(k), const_cast<uint8_t*>(v), true);
}

void CudaBackend::transfer_rows(int64_t layer, std::span<const int32_t> cells, uint8_t* k, uint8_t* v,
                                bool to_device) {
  if (layer < first_layer_ || layer >= dims_.n_layer) {
    throw InvalidArgument("layer " + std::to_string(layer) + " keeps its K/V on the CPU");
  }
  const auto li = static_cast<size_t>(layer - first_layer_);
  const int64_t n_cells = in_window_[li] ? n_window_cells_ : n_cells_;
  for (int32_t c : cells) {
    if (c < 0 || c >= n_cells) throw InvalidArgument("cell " + std::to_string(c) + " outside the GPU cache");
  }
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // no step in flight uses the rows
  const cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  for (auto [buf, row, host] : {std::tuple{&k_cache_[li], k_ref_.row_bytes, k}, std::tuple{&v_cache_[li], v_ref_.row_bytes, v}}) {
    const auto r = static_cast<size_t>(row);
    uint8_t* dev = buf->as<uint8_t>();
    for (size_t i = 0; i < cells.size();) {
      size_t j = i + 1;
      while (j < cells.size() && cells[j] == cells[j - 1] + 1) ++j;
      uint8_t* d = dev + static_cast<size_t>(cells[i]) * r;
      uint8_t* h = host + i * r;
      FERRITE_CUDA_CHECK(cudaMemcpy(to_device ? d : h, to_device ? h : d, (j - i) * r, kind));
      i = j;
    }
  }
}

}  // namespace ferrite::cuda
