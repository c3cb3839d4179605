#include "cuda/backend/weights.h"

#include <algorithm>

#include "core/error.h"
#include "cuda/kernels/check.h"

namespace ferrite::cuda {

GpuMatrix WeightStore::upload(TensorType type, int64_t rows, int64_t cols, const void* host, const std::string& name) {
  buffers_.emplace_back();
  const GpuMatrix m = upload_matrix(type, rows, cols, host, buffers_.back(), name);
  bytes_ += buffers_.back().size();
  // upload_matrix copies from pageable memory on the legacy stream, which
  // may return before the copy lands; the backend's stream does not wait
  // for that stream, and a kernel on it reads the weight next.
  FERRITE_CUDA_CHECK(cudaDeviceSynchronize());
  return m;
}

const GpuMatrix& WeightStore::matrix(const backend::Weight& w) {
  if (!w) throw InvalidArgument("GPU weights: an absent weight was used");
  const auto it = single_.find(w.info);
  if (it != single_.end()) return it->second;
  if (w.info->data == nullptr) throw ModelError("tensor " + w.info->name + " has no data");
  return single_[w.info] = upload(w.type(), w.rows(), w.cols(), w.info->data, w.info->name);
}

bool WeightStore::stackable(const std::vector<const backend::Weight*>& parts) {
  bool same = !parts.empty();
  for (const backend::Weight* p : parts) {
    same = same && *p && p->info->n_dims == 2 && p->type() == parts[0]->type() && p->cols() == parts[0]->cols() &&
           p->info->data != nullptr;
  }
  return same;
}

const WeightStore::Stack& WeightStore::stacked(const std::vector<const backend::Weight*>& parts) {
  std::vector<const gguf::TensorInfo*> key;
  for (const backend::Weight* p : parts) key.push_back(p->info);
  const auto it = stacks_.find(key);
  if (it != stacks_.end()) return it->second;
  Stack st;
  if (!stackable(parts)) {
    for (const backend::Weight* p : parts) st.parts.push_back(matrix(*p));
    return stacks_[key] = st;
  }
  // Rows are stored one after another in every GGUF weight type, so the
  // stacked matrix is the parts' bytes in order.
  uint64_t bytes = 0;
  int64_t rows = 0;
  for (const backend::Weight* p : parts) {
    bytes += p->info->n_bytes;
    rows += p->rows();
  }
  std::vector<uint8_t> host;
  host.reserve(bytes);
  for (const backend::Weight* p : parts) host.insert(host.end(), p->info->data, p->info->data + p->info->n_bytes);
  st.all = upload(parts[0]->type(), rows, parts[0]->cols(), host.data(), parts[0]->info->name + " (stacked)");
  int64_t r0 = 0;
  for (const backend::Weight* p : parts) {
    st.parts.push_back(row_slice(st.all, r0, p->rows()));
    r0 += p->rows();
  }
  return stacks_[key] = st;
}

const GpuMatrix& WeightStore::experts_gate_up(const backend::Weight& gate, const backend::Weight& up) {
  const auto it = gate_up_.find(gate.info);
  if (it != gate_up_.end()) return it->second;
  const gguf::TensorInfo* g = gate.info;
  const gguf::TensorInfo* u = up.info;
  if (g->data == nullptr || u->data == nullptr || g->n_dims != 3 || u->n_dims != 3 || g->type != u->type ||
      g->ne != u->ne || g->n_bytes != u->n_bytes) {
    return gate_up_[gate.info] = GpuMatrix{};  // the caller uses them one by one
  }
  // Expert e's bytes are the e-th of n_expert equal parts.
  const int64_t n_expert = g->ne[2];
  const uint64_t per_expert = g->n_bytes / static_cast<uint64_t>(n_expert);
  std::vector<uint8_t> host(2 * g->n_bytes);
  for (int64_t e = 0; e < n_expert; ++e) {
    uint8_t* dst = host.data() + 2 * per_expert * static_cast<uint64_t>(e);
    std::copy_n(g->data + per_expert * e, per_expert, dst);
    std::copy_n(u->data + per_expert * e, per_expert, dst + per_expert);
  }
  return gate_up_[gate.info] = upload(g->type, 2 * g->ne[1] * n_expert, g->ne[0], host.data(), g->name + " (stacked with up)");
}

}  // namespace ferrite::cuda
