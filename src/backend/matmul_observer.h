// An optional observer of the inputs of the weight products, for tools that
// study activations (`ferrite imatrix`). The CPU backend calls it, when one
// is set in its Workspace (cpu/backend/workspace.h), with the rows each
// weight matrix multiplies: every projection of every architecture (its
// products) and the expert products of the mixture of experts. Called on the
// thread that runs the forward pass, before the product; the rows are only
// valid during the call. Other backends do not call it (a context refuses an
// observer with GPU layers).
#pragma once

#include <cstdint>

#include "gguf/file.h"

namespace ferrite::backend {

class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  // x [n, cols]: the input rows of a product with weight `w`; `expert` is
  // the expert of a 3-D expert tensor (-1 for a plain matrix).
  virtual void on_matmul(const gguf::TensorInfo& w, int64_t expert, const float* x, int64_t n, int64_t cols) = 0;
};

}  // namespace ferrite::backend
