// The engine's LoRA adapters: the list /lora-adapters shows, the default
// scales POST /lora-adapters sets, and the scales each task runs with.
#include <string>

#include "core/error.h"
#include "server/engine.h"

namespace ferrite::server {

std::vector<LoraAdapterInfo> Engine::lora_adapters() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LoraAdapterInfo> out;
  for (size_t i = 0; i < opt_.lora.size(); ++i) {
    out.push_back({static_cast<int>(i), opt_.lora[i]->path(), lora_default_[i]});
  }
  return out;
}

void Engine::set_lora_scales(const std::vector<float>& scales) {
  if (scales.size() != opt_.lora.size()) {
    throw InvalidArgument(std::to_string(scales.size()) + " LoRA scales for " + std::to_string(opt_.lora.size()) +
                          " adapters");
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Slots start with the scales of their task (start(), on the engine thread
  // under mu_); running slots keep theirs.
  lora_default_ = scales;
}

const std::vector<float>& Engine::lora_of(const Task& task) const {
  const auto& own = task.params().lora;
  return own ? *own : lora_default_;
}

}  // namespace ferrite::server
