// GPU offload for a context (-ngl): builds the GPU implementation of the
// model when ferrite was built with CUDA (FERRITE_HAVE_CUDA).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "gguf/tensor_type.h"
#include "backend/backend.h"
#include "backend/switches.h"
#include "model/model.h"

namespace ferrite::runtime {

// Layers to offload meaning "all" (the -ngl all of the tools).
constexpr int kAllLayers = -1;

// Whether this build has a GPU backend (offload takes effect).
bool gpu_offload_available();

// The GPU backend of an offload, and the first layer it runs (the layers
// below run on the CPU; the output runs on the GPU).
struct Offload {
  std::unique_ptr<backend::Backend> backend;
  int64_t first_layer = 0;
};

// The GPU backend for `m` with a cache of n_cells cells (K and V of types
// type_k, type_v) for its last n_gpu_layers layers (kAllLayers: all), the
// sliding-window or chunked layers (HParams::is_swa) with window_cells cells instead
// when window_cells > 0 (the window of a KvCache, runtime/kv_cache.h), or
// throws InvalidArgument when this build has no CUDA backend, the count is
// not one of layers or the GPU has no cache of those types (ModelError, with
// the numbers, when it does not fit).
Offload make_offload(const model::Model& m, int64_t n_cells, int n_gpu_layers, TensorType type_k = TensorType::F16,
                     TensorType type_v = TensorType::F16, const backend::Switches& sw = backend::env_switches(),
                     int64_t window_cells = 0);

struct GpuFit {
  int n_layers = 0;    // the largest -ngl that fits (0: none)
  std::string report;  // the numbers, one line
};

struct ContextParams;  // runtime/context.h

// What --fit picks for a context with parameters p: the largest number of
// layers whose weights, KV cache (as that context allocates it,
// runtime::cache_plan: its cells, K and V types, and the sliding-window
// layers' window (sliding or chunked) sized for p.n_seq_max sequences) and scratch fit in the
// free memory of the device. Throws InvalidArgument without a CUDA build or
// device, and as cache_plan.
GpuFit fit_gpu_layers(const model::Model& m, const ContextParams& p);

// The GPU's limits for reports (`ferrite bench`: its fraction of the limit):
// memory bandwidth and the peak of the arithmetic the GPU's prefill runs on
// for weights of type t (f16 tensor cores; f32 units for F32 weights).
// Throws InvalidArgument without a CUDA build or device.
struct GpuLimits {
  std::string name;
  double read_bytes_per_s = 0.0;
  double peak_ops_per_s = 0.0;
  std::string peak_kind;  // "f16-tensor", "f32"
};
GpuLimits gpu_limits(TensorType main_type);

}  // namespace ferrite::runtime
