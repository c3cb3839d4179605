// Turns a `-m` argument into a file path: an existing path is used as is;
// otherwise the name is resolved through the model search path (see
// hub/resolve.h), and a clear error lists where it looked.
#pragma once

#include <string>

namespace ferrite::tools {
std::string resolve_model_argument(const std::string& arg);
}
