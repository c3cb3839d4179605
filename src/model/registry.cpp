#include <algorithm>
#include <string>

#include "core/error.h"
#include "model/arch_factories.h"
#include "model/architecture.h"

namespace ferrite::model {
namespace {

struct Entry {
  const char* name;  // general.architecture
  ArchFactory make;
};

// One row per supported `general.architecture` (arch_factories.h).
#define FERRITE_ENTRY(name, factory) {name, factory},
constexpr Entry kArchitectures[] = {FERRITE_ARCHITECTURES(FERRITE_ENTRY)};
#undef FERRITE_ENTRY

}  // namespace

ArchFactory find_architecture(const std::string& name) {
  for (const Entry& e : kArchitectures) {
    if (name == e.name) return e.make;
  }
  std::string list;
  for (const std::string& s : supported_architectures()) list += (list.empty() ? "" : ", ") + s;
  throw ModelError("unsupported model architecture '" + name + "' (supported: " + list + ")");
}

std::vector<std::string> supported_architectures() {
  std::vector<std::string> names;
  for (const Entry& e : kArchitectures) names.emplace_back(e.name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace ferrite::model
