// Weight upload of the GPU decoder: a tensor as it is stored, or several
// matrices of one type and row length stacked into one (Q|K|V, gate|up:
// one product launch for a decode step) with views of each part.
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/gpu_decoder.h"

namespace ferrite::cuda {

GpuMatrix GpuDecoder::upload(const std::string& name, bool required) {
  const gguf::TensorInfo* t = model_.file().find_tensor(name);
  if (t == nullptr) {
    if (required) throw ModelError(model_.file().path() + ": required tensor " + name + " is missing");
    return {};
  }
  const int64_t k = t->ne[0];
  const int64_t n = t->n_dims > 1 ? t->ne[1] : 1;
  buffers_.emplace_back();
  const GpuMatrix g = upload_matrix(t->type, n, k, t->data, buffers_.back(), name);
  weight_bytes_ += buffers_.back().size();
  return g;
}

bool GpuDecoder::stackable(const std::vector<std::string>& names) const {
  const gguf::TensorInfo* first = nullptr;
  for (const std::string& name : names) {
    const gguf::TensorInfo* t = model_.file().find_tensor(name);
    if (t == nullptr || t->n_dims != 2 || t->data == nullptr) return false;
    if (first == nullptr) first = t;
    if (t->type != first->type || t->ne[0] != first->ne[0]) return false;
  }
  return first != nullptr;
}

GpuMatrix GpuDecoder::upload_stacked(const std::vector<std::string>& names, const std::vector<GpuMatrix*>& views) {
  std::vector<const gguf::TensorInfo*> parts;
  for (const std::string& name : names) {
    const gguf::TensorInfo* t = model_.file().find_tensor(name);
    if (t == nullptr) throw ModelError(model_.file().path() + ": required tensor " + name + " is missing");
    parts.push_back(t);
  }
  bool same = true;
  for (const gguf::TensorInfo* t : parts) {
    same = same && t->n_dims == 2 && t->type == parts[0]->type && t->ne[0] == parts[0]->ne[0] && t->data != nullptr;
  }
  if (!same) {
    for (size_t i = 0; i < names.size(); ++i) *views[i] = upload(names[i], true);
    return {};
  }
  // Rows are stored one after another in every GGUF weight type, so the
  // stacked matrix is the parts' bytes in order.
  uint64_t bytes = 0;
  int64_t rows = 0;
  for (const gguf::TensorInfo* t : parts) {
    bytes += t->n_bytes;
    rows += t->ne[1];
  }
  std::vector<uint8_t> host;
  host.reserve(bytes);
  for (const gguf::TensorInfo* t : parts) host.insert(host.end(), t->data, t->data + t->n_bytes);
  buffers_.emplace_back();
  const GpuMatrix all = upload_matrix(parts[0]->type, rows, parts[0]->ne[0], host.data(), buffers_.back(),
                                      names[0] + " (stacked)");
  weight_bytes_ += buffers_.back().size();
  int64_t r0 = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    *views[i] = row_slice(all, r0, parts[i]->ne[1]);
    r0 += parts[i]->ne[1];
  }
  return all;
}

}  // namespace ferrite::cuda
