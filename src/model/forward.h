// The batch and KV view of a forward pass (backend/step.h), under the names
// the model and the runtime use.
#pragma once

#include "backend/step.h"

namespace ferrite::model {

using backend::ForwardBatch;
using backend::KvLayer;
using backend::KvView;
using backend::RecurrentLayer;
using backend::RecurrentView;

}  // namespace ferrite::model
