// GPU offload for a context (-ngl): builds the GPU implementation of the
// model when ferrite was built with CUDA (FERRITE_HAVE_CUDA).
#pragma once

#include <cstdint>
#include <memory>

#include "model/architecture.h"
#include "model/model.h"

namespace ferrite::runtime {

// Layers to offload meaning "all" (the -ngl all of the tools).
constexpr int kAllLayers = -1;

// The GPU architecture for `m` with a cache of n_cells cells, or throws
// InvalidArgument when this build has no CUDA backend or the model cannot be
// offloaded (ModelError when it does not fit).
std::unique_ptr<model::Architecture> make_offload(const model::Model& m, int64_t n_cells, int n_gpu_layers);

}  // namespace ferrite::runtime
