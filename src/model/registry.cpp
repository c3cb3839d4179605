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

// One row per supported `general.architecture`.
constexpr Entry kArchitectures[] = {
    {"llama", make_llama},
    {"qwen2", make_qwen2},
    {"qwen2moe", make_qwen2moe},
    {"qwen3", make_qwen3},
    {"qwen3moe", make_qwen3},
    {"gemma", make_gemma},
    {"gemma2", make_gemma2},
    {"gemma3", make_gemma3},
    {"phi3", make_phi3},
    {"gpt2", make_gpt2},
    {"gptneox", make_gptneox},
    {"starcoder2", make_starcoder2},
    {"falcon", make_falcon},
    {"bert", make_bert},
};

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
