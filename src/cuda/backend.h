// The CUDA backend as the runtime sees it (no CUDA headers here): a GPU
// implementation of model::Architecture for a loaded model, holding the
// weights, the KV cache and the scratch memory on the device.
#pragma once

#include <cstdint>
#include <memory>

#include "model/architecture.h"
#include "model/model.h"

namespace ferrite::cuda {

struct OffloadParams {
  int64_t n_cells = 0;   // KV cache cells (the context size)
  int n_gpu_layers = -1; // layers on the GPU; -1 or >= n_layer: all (partial offload is not supported yet)
  int device = 0;
};

// Number of CUDA devices visible (0 when there is no driver or GPU).
int device_count();

// Uploads the model's weights and allocates the cache on the GPU. Throws
// InvalidArgument for an architecture, weight type or -ngl the GPU path does
// not support, and ModelError (with the numbers) when it does not fit.
// The returned architecture keeps references to `m`, which must outlive it.
std::unique_ptr<model::Architecture> make_decoder(const model::Model& m, const OffloadParams& p);

}  // namespace ferrite::cuda
