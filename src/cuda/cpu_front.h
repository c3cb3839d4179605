// The CPU side of a partial offload (-ngl N below the layer count): the
// embedding and the first layers [0, n_cpu_layers) of the dense decoder run
// on the CPU with the model blocks (model/blocks.h) over the runtime's CPU
// cache, leaving the residual stream x [n_tokens, n_embd] on the host for the
// GPU layers (one crossing per pass). Plain host code (no CUDA headers).
#pragma once

#include <cstdint>
#include <vector>

#include "model/blocks.h"
#include "model/model.h"

namespace ferrite::cuda {

class CpuFront {
 public:
  // Binds the weights of layers [0, n_cpu_layers) and the embedding table.
  CpuFront(const model::Model& m, int64_t n_cpu_layers);

  // x [batch.n_tokens, n_embd] after the CPU layers (a view into ws.x, valid
  // until the workspace is used again).
  const float* run(const model::ForwardBatch& batch, const model::KvView& kv, cpu::ThreadPool& pool,
                   model::Workspace& ws) const;

  int64_t n_layers() const { return static_cast<int64_t>(layers_.size()); }

 private:
  struct Layer {
    model::Tensor attn_norm;
    model::AttentionWeights attn;
    model::Tensor ffn_norm;
    model::FfnWeights ffn;
  };
  model::HParams hp_;
  model::Tensor tok_embd_, rope_freqs_;
  std::vector<Layer> layers_;
};

}  // namespace ferrite::cuda
