#include "support/test_data.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ferrite::test {

std::filesystem::path shared_root() {
  if (const char* env = std::getenv("FERRITE_SHARED"); env != nullptr && *env != '\0') {
    return env;
  }
  return FERRITE_DEFAULT_SHARED;
}

std::filesystem::path shared_path(const std::string& relative) { return shared_root() / relative; }

bool in_ci() {
  const char* env = std::getenv("CI");
  return env != nullptr && std::string(env) == "true";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot read " + path.string());
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ferrite::test
