// The CUDA backend as the runtime sees it (no CUDA headers here): a GPU
// implementation of model::Architecture for a loaded model, holding the
// weights, the KV cache and the scratch memory on the device.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/architecture.h"
#include "model/model.h"

namespace ferrite::cuda {

struct OffloadParams {
  int64_t n_cells = 0;   // KV cache cells (the context size)
  int n_gpu_layers = -1; // the last N layers (and the output) on the GPU; -1 or >= n_layer: all
  int device = 0;
  // The GPU layers' K and V cache types: f16, q8_0, q4_0, q4_1, q5_0, q5_1
  // (the CPU layers of a partial offload keep the runtime's cache, of the same types).
  TensorType type_k = TensorType::F16, type_v = TensorType::F16;
};

// Number of CUDA devices visible (0 when there is no driver or GPU).
int device_count();

// What fits on the device (for --fit and the errors): bytes of each layer
// (weights + its KV cache), of the output part and the embedding table, the
// scratch allowance, the free and total device memory, and the largest N
// whose last N layers (with the output; the embedding table too when N is
// all layers) fit in the free memory.
struct FitReport {
  std::vector<uint64_t> layer_bytes;  // [n_layer]
  uint64_t output_bytes = 0, embd_bytes = 0, scratch_bytes = 0;
  uint64_t free_bytes = 0, total_bytes = 0;
  int max_layers = 0;
  // Bytes needed with the last n layers on the device.
  uint64_t needed(int n) const;
};
// The cache bytes per layer are those of n_cells rows of type_k and type_v.
FitReport fit_report(const model::Model& m, int64_t n_cells, int device = 0, TensorType type_k = TensorType::F16,
                     TensorType type_v = TensorType::F16);

// Uploads the model's weights and allocates the cache on the GPU. Throws
// InvalidArgument for an architecture, weight type or -ngl the GPU path does
// not support, and ModelError (with the numbers) when it does not fit.
// The returned architecture keeps references to `m`, which must outlive it.
std::unique_ptr<model::Architecture> make_decoder(const model::Model& m, const OffloadParams& p);

}  // namespace ferrite::cuda
