// The CPU side of a partial offload (-ngl N below the layer count): the
// embedding and the first layers [0, n_cpu_layers) of the decoder (dense or
// expert feed-forward) run on the CPU with the model blocks (model/blocks.h)
// over the runtime's CPU cache, with the weights the model's CPU Decoder bound (model/decoder.h, so
// every optional tensor it knows, attn_output.bias included), leaving the residual stream x [n_tokens, n_embd] on the host for the
// GPU layers (one crossing per pass). Plain host code (no CUDA headers).
#pragma once

#include <cstdint>

#include "model/blocks.h"
#include "model/decoder.h"
#include "model/model.h"

namespace ferrite::cuda {

class CpuFront {
 public:
  // Runs layers [0, n_cpu_layers) of m's decoder (InvalidArgument when m's
  // architecture is not model::Decoder).
  CpuFront(const model::Model& m, int64_t n_cpu_layers);

  // x [batch.n_tokens, n_embd] after the CPU layers (a view into ws.x, valid
  // until the workspace is used again).
  const float* run(const model::ForwardBatch& batch, const model::KvView& kv, cpu::ThreadPool& pool,
                   model::Workspace& ws) const;

  int64_t n_layers() const { return n_layers_; }

 private:
  model::HParams hp_;
  const model::Decoder* decoder_ = nullptr;  // owned by the model
  int64_t n_layers_ = 0;
};

}  // namespace ferrite::cuda
