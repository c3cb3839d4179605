#include "runtime/offload.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "runtime/context.h"

#ifdef FERRITE_HAVE_CUDA
#include "cuda/backend.h"
#endif

namespace ferrite::runtime {

bool gpu_offload_available() {
#ifdef FERRITE_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

#ifdef FERRITE_HAVE_CUDA
namespace {

// The sliding-window (or chunked) layers of `hp` (those a window cache keeps in its own cells).
std::vector<bool> window_layers(const model::HParams& hp) {
  std::vector<bool> w(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) w[static_cast<size_t>(il)] = hp.is_swa(il);
  return w;
}

}  // namespace
#endif

Offload make_offload(const model::Model& m, int64_t n_cells, int n_gpu_layers, TensorType type_k, TensorType type_v,
                     const backend::Switches& sw, int64_t window_cells) {
  const int64_t n_layer = m.hparams().n_layer;
  if (n_gpu_layers < kAllLayers || n_gpu_layers == 0) {
    throw InvalidArgument("GPU offload: -ngl " + std::to_string(n_gpu_layers) + " is not a number of layers to offload");
  }
  const int64_t n_gpu = n_gpu_layers == kAllLayers ? n_layer : std::min<int64_t>(n_gpu_layers, n_layer);
#ifdef FERRITE_HAVE_CUDA
  cuda::OffloadParams p;
  p.dims = m.dims();
  p.n_cells = n_cells;
  p.first_layer = n_layer - n_gpu;
  p.type_k = type_k;
  p.type_v = type_v;
  p.switches = sw;
  if (window_cells > 0) {
    p.window_cells = window_cells;
    p.window_layers = window_layers(m.hparams());
  }
  return Offload{cuda::make_backend(m.file(), p), p.first_layer};
#else
  (void)window_cells;
  (void)n_cells;
  (void)n_gpu;
  (void)type_k;
  (void)type_v;
  (void)sw;
  throw InvalidArgument("GPU offload (-ngl) needs a build with CUDA (cmake -DFERRITE_CUDA=ON)");
#endif
}

GpuFit fit_gpu_layers(const model::Model& m, const ContextParams& p) {
  const model::HParams& hp = m.hparams();
  const CachePlan plan = cache_plan(hp, p);  // the Context's rules for its cache
#ifdef FERRITE_HAVE_CUDA
  const bool windowed = plan.window_cells > 0;
  const cuda::FitReport r = cuda::fit_report(m.file(), m.dims(), plan.n_cells, 0, p.cache_type, p.cache_type_v,
                                             plan.window_cells,
                                             windowed ? window_layers(hp) : std::vector<bool>{});
  auto mib = [](uint64_t b) { return std::to_string(static_cast<int64_t>(std::llround(b / (1024.0 * 1024.0)))); };
  GpuFit fit;
  fit.n_layers = r.max_layers;
  const uint64_t per_layer = r.layer_bytes.empty() ? 0 : r.layer_bytes.back();
  const std::string seqs = p.n_seq_max > 1 ? " for " + std::to_string(p.n_seq_max) + " sequences" : std::string();
  fit.report = "fit: " + std::to_string(r.max_layers) + " of " + std::to_string(hp.n_layer) + " layers (" +
               mib(per_layer) + " MiB per layer with " + std::to_string(plan.n_cells) + " cache cells" +
               (windowed ? ", " + std::to_string(plan.window_cells) + " in " +
                               (hp.n_chunk > 0 ? "chunked" : "sliding-window") + " layers" + seqs
                         : std::string()) +
               ", output " +
               mib(r.output_bytes) + " MiB, embeddings " + mib(r.embd_bytes) + " MiB, scratch " +
               mib(r.scratch_bytes) + " MiB) need " + mib(r.needed(r.max_layers)) + " MiB; " + mib(r.free_bytes) +
               " MiB free of " + mib(r.total_bytes) + " MiB";
  return fit;
#else
  (void)plan;
  throw InvalidArgument("--fit needs a build with CUDA (cmake -DFERRITE_CUDA=ON)");
#endif
}

GpuLimits gpu_limits(TensorType main_type) {
#ifdef FERRITE_HAVE_CUDA
  const cuda::DeviceLimits d = cuda::device_limits(0);
  GpuLimits g;
  g.name = d.name;
  g.read_bytes_per_s = d.read_bytes_per_s;
  const bool f32 = main_type == TensorType::F32;
  g.peak_ops_per_s = f32 ? d.f32_ops_per_s : d.f16_tensor_ops_per_s;
  g.peak_kind = f32 ? "f32" : "f16-tensor";
  return g;
#else
  (void)main_type;
  throw InvalidArgument("GPU limits need a build with CUDA (cmake -DFERRITE_CUDA=ON)");
#endif
}

}  // namespace ferrite::runtime
