// One forward pass as an architecture sees it: the batch, the KV view, and
// the operations (backend/ops.h) of the backend that runs the current layer.
// A Placement says which backend runs which layers: one backend for every
// layer, or (partial GPU offload) the first layers on one and the rest on
// another. The embeddings run on the first layer's backend and the output
// head on the last's; the residual stream crosses where the layers change
// backend (Step::enter_layer), once per pass.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "model/forward.h"
#include "model/hparams.h"

namespace ferrite::model {

class Architecture;

class Placement {
 public:
  // Every layer on `all`.
  explicit Placement(backend::Backend& all);
  // Layers [0, first_back) on `front`, [first_back, n_layer) on `back`.
  Placement(backend::Backend& front, backend::Backend& back, int64_t first_back);

  backend::Backend& at(int64_t layer) const { return layer < first_back_ ? *front_ : *back_; }
  // The distinct backends, in layer order.
  const std::vector<backend::Backend*>& backends() const { return list_; }

 private:
  backend::Backend* front_;
  backend::Backend* back_;
  int64_t first_back_;
  std::vector<backend::Backend*> list_;
};

class Step {
 public:
  Step(const Placement& p, const ForwardBatch& batch, const KvView& kv);

  const ForwardBatch& batch;
  const KvView& kv;

  // The operations of the current backend (before the first enter_layer: layer 0's).
  backend::Ops& ops() { return *cur_; }
  // Layer il's backend from here on; x (the residual stream) moves to it
  // when it is another backend.
  void enter_layer(int64_t il, backend::Act& x);
  // RoPE tables of the batch's positions on every backend of the step (before any other operation).
  int prepare_rope(const backend::RopeConfig& c);

 private:
  const Placement& placement_;
  backend::Backend* cur_;
  std::vector<float> staging_;  // a crossing between two backends without host memory
};

// The sizes the operations need, from the hyperparameters.
backend::ModelDims dims_of(const HParams& hp);

// Runs one forward pass of `arch` on the placement's backends: begin_step on
// each, the architecture's operations (forward, or forward_hidden when
// hidden is not null), end_step on each. logits [n_out, n_vocab] and hidden
// [n_out, n_embd] are host memory (either may be null where the
// architecture allows it).
void run_step(const Architecture& arch, const Placement& p, const ForwardBatch& batch, const KvView& kv,
              float* logits, float* hidden = nullptr);

}  // namespace ferrite::model
