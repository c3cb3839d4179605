// The memory check of a GPU offload (backend.h fit_report): what the
// weights of each layer, the output and the token table take on the device
// (in the device's layouts), the KV cache of each layer, a scratch
// allowance, and how many of the last layers fit in the free memory.
#include <algorithm>
#include <cstdlib>
#include <string>

#include <cuda_runtime.h>

#include "core/error.h"
#include "cuda/backend.h"
#include "cuda/check.h"
#include "cuda/gpu_matrix.h"
#include "cuda/ops.h"

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

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

uint64_t FitReport::needed(int n) const {
  const int n_layer = static_cast<int>(layer_bytes.size());
  uint64_t b = output_bytes + scratch_bytes + (n >= n_layer ? embd_bytes : 0);
  for (int il = std::max(0, n_layer - n); il < n_layer; ++il) b += layer_bytes[static_cast<size_t>(il)];
  return b;
}

FitReport fit_report(const model::Model& m, int64_t n_cells, int device, TensorType type_k, TensorType type_v) {
  const model::HParams& hp = m.hparams();
  FitReport r;
  r.layer_bytes.assign(static_cast<size_t>(hp.n_layer), 0);
  // [n_cells, row bytes] for K and for V.
  const uint64_t cache_per_layer =
      static_cast<uint64_t>(n_cells) * static_cast<uint64_t>(kv_cache_row_bytes(type_k, hp.n_embd_kv()) +
                                                             kv_cache_row_bytes(type_v, hp.n_embd_kv()));
  for (uint64_t& b : r.layer_bytes) b = cache_per_layer;
  bool has_output = false;
  for (const gguf::TensorInfo& t : m.file().tensors()) {
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

}  // namespace ferrite::cuda
