// An optional observer of the inputs of the weight products, for tools that
// study activations (`ferrite imatrix`). The model calls it, when one is set
// in the Workspace, with the rows each weight matrix multiplies: from
// `linear` (every projection of every architecture) and from the expert
// products of `mixture_of_experts`. Called on the thread that runs the
// forward pass, before the product; the rows are only valid during the call.
#pragma once

#include <cstdint>

#include "gguf/file.h"

namespace ferrite::model {

class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  // x [n, cols]: the input rows of a product with weight `w`; `expert` is
  // the expert of a 3-D expert tensor (-1 for a plain matrix).
  virtual void on_matmul(const gguf::TensorInfo& w, int64_t expert, const float* x, int64_t n, int64_t cols) = 0;
};

}  // namespace ferrite::model
