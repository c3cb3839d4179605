// The CPU backend's scratch memory (cpu/backend/workspace.h) under the name
// the model's CPU entry point (Model::forward) and the runtime use.
#pragma once

#include "cpu/backend/workspace.h"

namespace ferrite::model {

using Workspace = cpu::Workspace;

}  // namespace ferrite::model
