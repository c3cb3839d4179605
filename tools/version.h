// `ferrite --version`: the version, the commit it was built from, the
// backends and the instruction-set levels compiled in and in use.
#pragma once

#include <string>

namespace ferrite::tools {

std::string version_text();

}  // namespace ferrite::tools
