// The memory check of a GPU offload (cuda/backend.h fit_report) and the
// making of the backend (make_backend): what the
// weights of each layer, the output and the token table take on the device
// (in the device's layouts), the KV cache of each layer, a scratch
// allowance, and how many of the last layers fit in the free memory.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include <cuda_runtime.h>

#include "core/error.h"
#include "cuda/backend.h"
#include "cuda/kernels/check.h"
#include "cuda/backend/cuda_backend.h"
#include "cuda/kernels/gpu_matrix.h"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

// Scratch allowance in the fit check, beyond weights and cache (activations
// of a 512-token pass, cuBLAS workspace, CUDA context).
constexpr uint64_t kScratchAllowance = 1024ull * 1024 * 1024;

// Bytes a tensor takes on the GPU (Q2_K/Q3_K matrices are padded there;
// 3-D expert tensors are matrices of ne[1] * ne[2] rows).
uint64_t device_bytes(const gguf::TensorInfo& t) {
  if ((t.n_dims == 2 || t.n_dims == 3) && gpu_supports(t.type)) {
    return gpu_matrix_bytes(t.type, t.ne[1] * (t.n_dims == 3 ? t.ne[2] : 1), t.ne[0]);
  }
  return t.n_bytes;
}

std::string mib(uint64_t b) {
  return std::to_string(static_cast<int64_t>(std::llround(static_cast<double>(b) / (1024.0 * 1024.0)))) + " MiB";
}

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

DeviceLimits device_limits(int device) {
  if (device_count() <= device) throw InvalidArgument("no CUDA device " + std::to_string(device));
  cudaDeviceProp prop{};
  FERRITE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  auto attr = [device](cudaDeviceAttr a) {
    int v = 0;
    FERRITE_CUDA_CHECK(cudaDeviceGetAttribute(&v, a, device));
    return static_cast<double>(v);
  };
  DeviceLimits d;
  d.name = prop.name;
  d.sm_count = prop.multiProcessorCount;
  d.clock_hz = attr(cudaDevAttrClockRate) * 1e3;  // kHz
  d.read_bytes_per_s = 2.0 * attr(cudaDevAttrMemoryClockRate) * 1e3 * attr(cudaDevAttrGlobalMemoryBusWidth) / 8.0;
  // Dense f16 tensor operations (2 per multiply-add) per SM per clock, and f32 FMA lanes per SM.
  const int cc = prop.major * 10 + prop.minor;
  const double tensor = cc == 90 ? 4096 : cc == 80 ? 2048 : cc == 86 || cc == 89 ? 1024 : 0;
  const double f32_lanes = cc == 80 ? 64 : 128;
  d.f16_tensor_ops_per_s = tensor * d.sm_count * d.clock_hz;
  d.f32_ops_per_s = 2.0 * f32_lanes * d.sm_count * d.clock_hz;
  return d;
}

uint64_t FitReport::needed(int n) const {
  const int n_layer = static_cast<int>(layer_bytes.size());
  uint64_t b = output_bytes + scratch_bytes + (n >= n_layer ? embd_bytes : 0);
  for (int il = std::max(0, n_layer - n); il < n_layer; ++il) b += layer_bytes[static_cast<size_t>(il)];
  return b;
}

FitReport fit_report(const gguf::File& file, const backend::ModelDims& hp, int64_t n_cells, int device,
                     TensorType type_k, TensorType type_v, int64_t window_cells,
                     const std::vector<bool>& window_layers) {
  FitReport r;
  r.layer_bytes.assign(static_cast<size_t>(hp.n_layer), 0);
  // [cells, row bytes] for K and for V: the window's cells in its layers.
  const auto row = static_cast<uint64_t>(kv_cache_row_bytes(type_k, hp.n_embd_kv()) +
                                         kv_cache_row_bytes(type_v, hp.n_embd_kv()));
  for (size_t il = 0; il < r.layer_bytes.size(); ++il) {
    const bool win = window_cells > 0 && il < window_layers.size() && window_layers[il];
    r.layer_bytes[il] = static_cast<uint64_t>(win ? window_cells : n_cells) * row;
  }
  r.cache_bytes = r.layer_bytes;
  bool has_output = false;
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (t.name.rfind("blk.", 0) == 0) {
      const int64_t il = std::strtoll(t.name.c_str() + 4, nullptr, 10);
      if (il >= 0 && il < hp.n_layer) r.layer_bytes[static_cast<size_t>(il)] += device_bytes(t);
    } else if (t.name == "token_embd.weight") {
      r.embd_bytes = device_bytes(t);
    } else {
      has_output = has_output || t.name == "output.weight";
      r.output_bytes += device_bytes(t);
    }
  }
  if (!has_output) r.output_bytes += r.embd_bytes;  // tied: the table is the output matrix
  r.scratch_bytes = kScratchAllowance;
  if (device_count() <= device) throw InvalidArgument("GPU offload: no CUDA device " + std::to_string(device));
  FERRITE_CUDA_CHECK(cudaSetDevice(device));
  size_t free_b = 0, total_b = 0;
  FERRITE_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  r.free_bytes = free_b;
  r.total_bytes = total_b;
  r.max_layers = 0;
  for (int n = static_cast<int>(hp.n_layer); n > 0; --n) {
    if (r.needed(n) <= r.free_bytes) {
      r.max_layers = n;
      break;
    }
  }
  return r;
}

std::unique_ptr<backend::Backend> make_backend(const gguf::File& file, const OffloadParams& p) {
  const backend::ModelDims& d = p.dims;
  const int64_t n_gpu = d.n_layer - p.first_layer;
  if (p.n_cells <= 0) throw InvalidArgument("GPU offload: the context size must be positive");
  if (device_count() <= p.device) throw InvalidArgument("GPU offload: no CUDA device " + std::to_string(p.device));
  FERRITE_CUDA_CHECK(cudaSetDevice(p.device));
  for (TensorType t : {p.type_k, p.type_v}) {
    if (!kv_cache_gpu_supported(t)) {
      throw InvalidArgument("GPU offload: KV cache type " + tensor_type_name(t) + " is not supported on the GPU (" +
                            kv_cache_gpu_type_names() + ")");
    }
  }
  // Weights + KV cache of the GPU layers + scratch against the free device memory.
  if (p.window_cells < 0 || (p.window_cells > 0 && p.window_layers.size() != static_cast<size_t>(d.n_layer))) {
    throw InvalidArgument("GPU offload: a window cache needs its cells and a flag per layer");
  }
  const FitReport fit = fit_report(file, d, p.n_cells, p.device, p.type_k, p.type_v, p.window_cells, p.window_layers);
  const uint64_t need = fit.needed(static_cast<int>(n_gpu));
  if (need > fit.free_bytes) {
    const std::string window =
        p.window_cells > 0 ? " (" + std::to_string(p.window_cells) + " in sliding-window layers)" : "";
    throw ModelError("GPU offload: " + std::to_string(n_gpu) + " of " + std::to_string(d.n_layer) +
                     " layers do not fit: they need " + mib(need) + " (weights and KV cache of " +
                     std::to_string(p.n_cells) + " cells" + window + ", output " + mib(fit.output_bytes) + ", scratch " +
                     mib(fit.scratch_bytes) + ") but " + mib(fit.free_bytes) + " of " + mib(fit.total_bytes) +
                     " are free; at most " + std::to_string(fit.max_layers) + " layers fit (--fit picks that)");
  }
  CudaBackendParams bp;
  bp.dims = d;
  bp.n_cells = p.n_cells;
  bp.first_layer = p.first_layer;
  bp.type_k = p.type_k;
  bp.type_v = p.type_v;
  bp.switches = p.switches;
  bp.window_cells = p.window_cells;
  bp.window_layers = p.window_layers;
  return std::make_unique<CudaBackend>(bp);
}

}  // namespace ferrite::cuda
