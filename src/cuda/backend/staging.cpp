// The CUDA backend's inputs of a step (begin_step): the tokens checked, each
// cache view's ranges checked and its attention planned (the whole cache's
// and, with a window cache, the window's: KvView::swa), and every host input
// staged in one upload whose layout (Layout, lay_out) is the same on both sides.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/ops/rope.h"
#include "cuda/backend/cuda_backend.h"
#include "cuda/kernels/check.h"

namespace ferrite::cuda {

void CudaBackend::check_tokens(const backend::ForwardBatch& batch) {
  for (int64_t t = 0; t < batch.n_tokens; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= dims_.n_vocab) {
      throw InvalidArgument("token id " + std::to_string(batch.tokens[t]) + " is outside the vocabulary (0.." +
                            std::to_string(dims_.n_vocab - 1) + ")");
    }
  }
}

void CudaBackend::plan_view(const backend::ForwardBatch& batch, const backend::KvView& kv, int64_t n_cells,
                            ViewStep& v) {
  const int64_t n = batch.n_tokens, n_kv = kv.n_kv;
  const bool window = &v == &views_[kWindowView];
  if (kv.n_cells != n_cells || kv.mask == nullptr || kv.slots == nullptr) {
    throw InvalidArgument(std::string("GPU backend: the ") + (window ? "window's" : "cache's") +
                          " view differs from the cache allocated (" + std::to_string(kv.n_cells) + " cells, " +
                          std::to_string(n_cells) + " here)");
  }
  if (n_kv < 0 || n_kv > n_cells) throw InvalidArgument("GPU backend: the view reads cells outside the cache");
  // Each token's cells: the view's ranges or all of [0, n_kv).
  v.kv = &kv;
  v.n_kv = n_kv;
  const bool ranges = kv.kv_begin != nullptr;
  v.mask_stride = ranges ? kv.mask_stride : n_kv;
  v.max_len = 0;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t b = ranges ? kv.kv_begin[t] : 0, len = ranges ? kv.kv_len[t] : n_kv;
    if (b < 0 || len < 0 || b + len > n_kv || len > v.mask_stride) {
      throw InvalidArgument("GPU backend: token " + std::to_string(t) + " reads cells outside the cache view");
    }
    if (kv.slots[t] < 0 || kv.slots[t] >= n_cells) {
      throw InvalidArgument("GPU backend: token " + std::to_string(t) + " goes to a cell outside the cache");
    }
    v.max_len = std::max(v.max_len, len);
  }
  if (rows_as_steps_) {
    v.plan = plan_rows_as_steps(batch, kv, v);  // sets n_split (and max_len)
  } else {
    v.plan = plan_attention(kv.kv_begin, kv.kv_len, n);
  }
  v.n_q_tiles = static_cast<int64_t>(v.plan.q_tiles.size() / 2);
  v.n_decode = static_cast<int64_t>(v.plan.decode_tokens.size());
  // Long ranges of few decode tokens: the decode attention splits them over the cells.
  if (!rows_as_steps_) v.n_split = attention_decode_splits(v.n_decode, dims_.n_head, v.max_len);
}

namespace {

// Byte offsets in the staged buffer, the same for the host and the device
// copy: take<T>(n) places n values of T (16-byte aligned).
class Layout {
 public:
  explicit Layout(uint8_t* base) : p_(base) {}
  template <typename T>
  T* take(int64_t n) {
    T* out = p_ != nullptr ? reinterpret_cast<T*>(p_ + bytes_) : nullptr;
    bytes_ += (static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(T) + 15) / 16 * 16;
    return out;
  }
  size_t bytes() const { return bytes_; }

 private:
  uint8_t* p_;
  size_t bytes_ = 0;
};

// Pointers of the staged inputs (host or device) as a Layout places them:
// ids and rows, each view's cells and plan, the RoPE tables, then the masks
// (last: the others keep their addresses as they grow, which the decode
// graphs rely on).
struct StagedPtrs {
  int32_t *tokens, *pos, *types, *seq, *rows;
  StagedView view[2];
  std::vector<float*> ropes;
};

// mask_floats[v]: {mask, mask_swa, mask_chunk} of view v (0: none).
StagedPtrs lay_out(Layout& l, int64_t n, int64_t n_out, const std::vector<backend::RopeConfig>& ropes,
                   const int64_t (&mask_floats)[2][3]) {
  StagedPtrs s{};
  s.tokens = l.take<int32_t>(n);
  s.pos = l.take<int32_t>(n);
  s.types = l.take<int32_t>(n);
  s.seq = l.take<int32_t>(n);
  s.rows = l.take<int32_t>(n_out);
  for (auto& v : s.view) {
    v.slots = l.take<int32_t>(n);
    v.begin = l.take<int32_t>(n);
    v.len = l.take<int32_t>(n);
    v.tiles = l.take<int32_t>(2 * n);
    v.listed = l.take<int32_t>(n);
  }
  for (const backend::RopeConfig& c : ropes) s.ropes.push_back(l.take<float>(2 * n * (c.n_rot / 2)));
  for (int v = 0; v < 2; ++v) {
    s.view[v].mask = l.take<float>(mask_floats[v][0]);
    s.view[v].mask_swa = l.take<float>(mask_floats[v][1]);
    s.view[v].mask_chunk = l.take<float>(mask_floats[v][2]);
  }
  return s;
}

}  // namespace

void CudaBackend::stage_view(const ViewStep& vs, int64_t n, bool window, const int64_t (&mask_floats)[3],
                             const StagedView& hv) {
  const backend::KvView& kv = *vs.kv;
  const bool ranges = kv.kv_begin != nullptr;
  std::memcpy(hv.slots, kv.slots, static_cast<size_t>(n) * sizeof(int32_t));
  for (int64_t t = 0; t < n; ++t) {
    hv.begin[t] = (ranges ? kv.kv_begin[t] : 0) + (vs.step_shift.empty() ? 0 : vs.step_shift[static_cast<size_t>(t)]);
    hv.len[t] = !vs.step_len.empty() ? vs.step_len[static_cast<size_t>(t)]
                : ranges             ? kv.kv_len[t]
                                     : static_cast<int32_t>(vs.n_kv);
  }
  // The window's view: its mask is the sliding (or chunk) one.
  const float* src[3] = {window && kv.mask_swa != nullptr ? kv.mask_swa : kv.mask, kv.mask_swa, kv.mask_chunk};
  float* dst[3] = {hv.mask, hv.mask_swa, hv.mask_chunk};
  for (int m = 0; m < 3; ++m) {
    if (mask_floats[m] > 0) std::memcpy(dst[m], src[m], static_cast<size_t>(mask_floats[m]) * sizeof(float));
  }
  // Ranges that start later (rows as steps in a window): their mask rows move along.
  for (size_t t = 0; t < vs.step_shift.size(); ++t) {
    const int64_t shift = vs.step_shift[t], stride = vs.mask_stride;
    if (shift == 0) continue;
    float* row = hv.mask + static_cast<int64_t>(t) * stride;
    std::memmove(row, row + shift, static_cast<size_t>(stride - shift) * sizeof(float));
    std::fill(row + stride - shift, row + stride, -std::numeric_limits<float>::infinity());
  }
  std::copy(vs.plan.q_tiles.begin(), vs.plan.q_tiles.end(), hv.tiles);
  std::copy(vs.plan.decode_tokens.begin(), vs.plan.decode_tokens.end(), hv.listed);
}

void CudaBackend::stage(const backend::ForwardBatch& batch) {
  const int64_t n = batch.n_tokens, n_out = batch.n_out;
  // Host inputs, staged in one upload: ids, cells, ranges, the attention
  // plans, RoPE tables, masks. The window's view has one mask (sliding or
  // chunk: the runtime's window view gives the same for both).
  int64_t mask_floats[2][3] = {};
  for (int v = 0; v < kViews; ++v) {
    const backend::KvView* kv = views_[v].kv;
    if (kv == nullptr) continue;
    const int64_t f = n * views_[v].mask_stride;
    mask_floats[v][0] = f;
    mask_floats[v][1] = v == kMainView && kv->mask_swa != nullptr ? f : 0;
    mask_floats[v][2] = v == kMainView && kv->mask_chunk != nullptr ? f : 0;
  }
  // The RoPE tables of the previous step's configurations come along
  // (prepare_rope then finds them staged: one copy per step).
  Layout sizing(nullptr);
  lay_out(sizing, n, n_out, known_ropes_, mask_floats);
  host_staged_.reserve(sizing.bytes());
  staged_.reserve(sizing.bytes());
  Layout host_layout(host_staged_.as<uint8_t>());
  const StagedPtrs h = lay_out(host_layout, n, n_out, known_ropes_, mask_floats);
  for (size_t i = 0; i < known_ropes_.size(); ++i) {
    const backend::RopeConfig& c = known_ropes_[i];
    cpu::rope_table(c, batch.pos, n, h.ropes[i], h.ropes[i] + n * (c.n_rot / 2));
  }
  std::memcpy(h.tokens, batch.tokens, static_cast<size_t>(n) * sizeof(int32_t));
  std::memcpy(h.pos, batch.pos, static_cast<size_t>(n) * sizeof(int32_t));
  if (batch.types != nullptr) {
    std::memcpy(h.types, batch.types, static_cast<size_t>(n) * sizeof(int32_t));
  } else {
    std::fill_n(h.types, n, 0);
  }
  if (batch.seq != nullptr) std::memcpy(h.seq, batch.seq, static_cast<size_t>(n) * sizeof(int32_t));
  if (n_out > 0) std::memcpy(h.rows, batch.out_rows, static_cast<size_t>(n_out) * sizeof(int32_t));
  for (int v = 0; v < kViews; ++v) {
    if (views_[v].kv != nullptr) stage_view(views_[v], n, v == kWindowView, mask_floats[v], h.view[v]);
  }
  FERRITE_CUDA_CHECK(
      cudaMemcpyAsync(staged_.as(), host_staged_.as(), sizing.bytes(), cudaMemcpyHostToDevice, stream_));
  Layout dev_layout(staged_.as<uint8_t>());
  const StagedPtrs d = lay_out(dev_layout, n, n_out, known_ropes_, mask_floats);
  in_.tokens = d.tokens;
  in_.pos = d.pos;
  in_.types = d.types;
  in_.seq = batch.seq != nullptr ? d.seq : nullptr;
  in_.rows = d.rows;
  for (int v = 0; v < kViews; ++v) {
    ViewStep& vs = views_[v];
    if (vs.kv == nullptr) continue;
    vs.slots = d.view[v].slots;
    vs.begin = d.view[v].begin;
    vs.len = d.view[v].len;
    vs.tiles = d.view[v].tiles;
    vs.listed = d.view[v].listed;
    vs.mask = d.view[v].mask;
    vs.mask_swa = mask_floats[v][1] > 0 ? d.view[v].mask_swa : v == kWindowView ? d.view[v].mask : nullptr;
    vs.mask_chunk = mask_floats[v][2] > 0 ? d.view[v].mask_chunk : v == kWindowView ? d.view[v].mask : nullptr;
  }
  rope_tables_.assign(d.ropes.begin(), d.ropes.end());
  n_staged_ropes_ = static_cast<int>(rope_tables_.size());
}

}  // namespace ferrite::cuda
