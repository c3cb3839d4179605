#include "model_path.h"

#include <filesystem>

#include "core/error.h"

namespace ferrite::tools {

std::string resolve_model_argument(const std::string& arg) {
  if (std::filesystem::exists(arg)) return arg;
  throw InvalidArgument("model '" + arg + "' not found");
}

}  // namespace ferrite::tools
