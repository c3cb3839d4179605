// Loading a model with progress: Model::load, then one read of every page
// of tensor data (so the first evaluation does not wait on the disk),
// reporting the bytes read so far. Tools draw a progress bar with it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "model/model.h"

namespace ferrite::model {

// Called with (0, total) first, then with non-decreasing `done`, and with
// (total, total) last; total is the bytes of all tensors.
using LoadProgress = std::function<void(uint64_t done, uint64_t total)>;

// Model::load(path) plus the page reads; a null `progress` skips them.
std::shared_ptr<const Model> load_with_progress(const std::string& path, const LoadProgress& progress);

}  // namespace ferrite::model
