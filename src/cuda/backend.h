// The CUDA backend as the runtime sees it (no CUDA headers here): making the
// backend (backend/backend.h) of a GPU offload, and the memory check that
// decides how many layers fit. The implementation is cuda/backend/ (the
// backend's plumbing: step life, graphs, weights, block operations) over
// cuda/kernels/ (the kernels and their host entry points, ops.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/switches.h"
#include "gguf/file.h"

namespace ferrite::cuda {

struct OffloadParams {
  backend::ModelDims dims;
  int64_t n_cells = 0;      // KV cache cells (the context size)
  int64_t first_layer = 0;  // the layers [first_layer, n_layer) and the output run on the GPU
  int device = 0;
  // The GPU layers' K and V cache types: f16, q8_0, q4_0, q4_1, q5_0, q5_1
  // (the CPU layers of a partial offload keep the runtime's cache, of the same types).
  TensorType type_k = TensorType::F16, type_v = TensorType::F16;
  backend::Switches switches;
  // A window cache (runtime/kv_cache.h): the layers marked in window_layers
  // ([n_layer]; the sliding-window ones) keep window_cells cells instead (0: none).
  int64_t window_cells = 0;
  std::vector<bool> window_layers;
};

// Number of CUDA devices visible (0 when there is no driver or GPU).
int device_count();

// A device's limits from its attributes (for `ferrite bench`'s fraction of
// the limit): the memory bandwidth (2 x memory clock x bus width) and the
// dense peak arithmetic of its tensor cores in f16 with f32 sums (what the
// prefill products run on) and of its f32 units, at the peak clock. The
// tensor rate per SM and clock is known for sm_80/86/89/90 (0 otherwise).
struct DeviceLimits {
  std::string name;
  int sm_count = 0;
  double clock_hz = 0.0;
  double read_bytes_per_s = 0.0;
  double f16_tensor_ops_per_s = 0.0;
  double f32_ops_per_s = 0.0;
};
DeviceLimits device_limits(int device = 0);

// What fits on the device (for --fit and the errors): bytes of each layer
// (weights + its KV cache), of the output part and the embedding table, the
// scratch allowance, the free and total device memory, and the largest N
// whose last N layers (with the output; the embedding table too when N is
// all layers) fit in the free memory.
struct FitReport {
  std::vector<uint64_t> layer_bytes;  // [n_layer]: weights and KV cache
  std::vector<uint64_t> cache_bytes;  // [n_layer]: the KV cache's part of layer_bytes
  uint64_t output_bytes = 0, embd_bytes = 0, scratch_bytes = 0;
  uint64_t free_bytes = 0, total_bytes = 0;
  int max_layers = 0;
  // Bytes needed with the last n layers on the device.
  uint64_t needed(int n) const;
};
// The cache bytes per layer are those of n_cells rows of type_k and type_v
// (window_cells rows in the layers marked in window_layers, when > 0).
FitReport fit_report(const gguf::File& file, const backend::ModelDims& dims, int64_t n_cells, int device = 0,
                     TensorType type_k = TensorType::F16, TensorType type_v = TensorType::F16,
                     int64_t window_cells = 0, const std::vector<bool>& window_layers = {});

// The CUDA backend of an offload of `file`'s model: checks that its layers
// fit (ModelError with the numbers when they do not), allocates their KV
// cache, and uploads each weight at its first use. Throws InvalidArgument for
// a device that is not there, cache types the GPU has not or weight types it
// does not multiply. The file must outlive the backend.
std::unique_ptr<backend::Backend> make_backend(const gguf::File& file, const OffloadParams& p);

}  // namespace ferrite::cuda
