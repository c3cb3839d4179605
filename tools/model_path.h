// Turns a `-m` argument into a file path: an existing path is used as is;
// otherwise the name is resolved through FERRITE_MODELS_PATH and the download
// cache, and a known name or owner/repo:file missing there is downloaded
// (see hub/resolve.h). A clear error lists where it looked.
#pragma once

#include <string>

namespace ferrite::tools {
std::string resolve_model_argument(const std::string& arg);
}
