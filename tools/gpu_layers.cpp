#include "gpu_layers.h"

#include <cstdio>
#include <exception>

#include "core/error.h"
#include "runtime/offload.h"

namespace ferrite::tools {

int gpu_layers_from_options(const std::string& ngl, bool fit, const model::Model& m, int64_t n_ctx,
                            TensorType type_k, TensorType type_v) {
  int n = 0;
  if (ngl == "all") {
    n = runtime::kAllLayers;
  } else {
    size_t used = 0;
    try {
      n = std::stoi(ngl, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != ngl.size()) {
      throw InvalidArgument("--n-gpu-layers takes a number of layers or 'all', not '" + ngl + "'");
    }
    if (n < 0) throw InvalidArgument("--n-gpu-layers must not be negative");
  }
  if (fit) {
    const runtime::GpuFit f = runtime::fit_gpu_layers(m, n_ctx, type_k, type_v);
    std::fprintf(stderr, "%s\n", f.report.c_str());
    n = f.n_layers;
  }
  return n;
}

}  // namespace ferrite::tools
