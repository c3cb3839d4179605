#include "runtime/offload.h"

#include "core/error.h"

#ifdef FERRITE_HAVE_CUDA
#include "cuda/backend.h"
#endif

namespace ferrite::runtime {

std::unique_ptr<model::Architecture> make_offload(const model::Model& m, int64_t n_cells, int n_gpu_layers) {
#ifdef FERRITE_HAVE_CUDA
  cuda::OffloadParams p;
  p.n_cells = n_cells;
  p.n_gpu_layers = n_gpu_layers;
  return cuda::make_decoder(m, p);
#else
  (void)m;
  (void)n_cells;
  (void)n_gpu_layers;
  throw InvalidArgument("GPU offload (-ngl) needs a build with CUDA (cmake -DFERRITE_CUDA=ON)");
#endif
}

}  // namespace ferrite::runtime
