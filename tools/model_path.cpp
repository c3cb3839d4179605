#include "model_path.h"

#include <cstdio>

#include "hub/config.h"
#include "hub/resolve.h"

namespace ferrite::tools {

std::string resolve_model_argument(const std::string& arg) {
  hub::ResolveOptions options;
  options.notify = [](const std::string& line) { std::fprintf(stderr, "ferrite: %s\n", line.c_str()); };
  return hub::resolve_model(arg, hub::HubConfig::from_environment(), options).string();
}

}  // namespace ferrite::tools
