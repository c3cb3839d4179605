// The -ngl / --fit options of the tools that run a model (run, serve): the
// number of layers to offload to the GPU.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/tensor_type.h"
#include "model/model.h"

namespace ferrite::tools {

// `ngl` is a number of layers or "all" (runtime::kAllLayers); with fit, the
// largest count that fits in the GPU's free memory for a context of n_ctx
// cells (0: the context's default; K and V caches of types type_k, type_v),
// whose report goes to stderr. Throws InvalidArgument for a bad value (and
// without a CUDA build for fit).
int gpu_layers_from_options(const std::string& ngl, bool fit, const model::Model& m, int64_t n_ctx,
                            TensorType type_k = TensorType::F16, TensorType type_v = TensorType::F16);

}  // namespace ferrite::tools
