// Loads a model for a command-line tool: with a progress bar on stderr when
// stderr is a terminal (model::load_with_progress), plainly otherwise.
#pragma once

#include <memory>
#include <string>

#include "model/model.h"

namespace ferrite::tools {

std::shared_ptr<const model::Model> load_model_with_bar(const std::string& path);

}  // namespace ferrite::tools
