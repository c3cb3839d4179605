// Rows as one-token steps (backend::ForwardBatch::rows_as_steps, set for
// speculative verification): each token of the batch must get the bits its
// own one-token step gives, so that greedy tokens do not depend on the
// drafts. The products see to it in LinearRunner (one-token kernels, rows in
// groups); here the attention: a one-token step sends its token to the
// decode kernel over the sequence's cells up to its own (the last it can
// see), split over the cells as attention_decode_splits(1, ...) says, with
// the warps per block of a one-token grid. A batch's tokens read longer
// ranges (up to the last token's cell; the later cells are hidden, but the
// split's chunks would move) and would take the tiled kernel or other
// splits and warps: each token's range is cut where its one-token step's
// ends, after its last visible cell rounded up to the runtime's padding of
// 32 cells (runtime/context.cpp cell_ranges; cut at the cell itself, a
// split's chunks moved by a few cells: tests/cuda/kv_window_test.cpp found a
// row whose bits differed), and the tokens are launched in groups of one
// split count with shape_rows = 1.
// A window cache's view (KvView::swa) starts each token's range later too: a
// one-token step's window has dropped the cells below its first visible one,
// so its range begins at that cell rounded down to the padding; the staged
// begin and mask row move by as many cells (step_shift; CudaBackend::stage_view).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "cuda/backend/cuda_backend.h"

namespace ferrite::cuda {

AttentionPlan CudaBackend::plan_rows_as_steps(const backend::ForwardBatch& batch, const backend::KvView& kv,
                                              ViewStep& v) {
  const int64_t n = batch.n_tokens;
  const bool ranges = kv.kv_begin != nullptr;
  constexpr int64_t kRangePad = 32;  // runtime/context.cpp kKvPad
  v.step_len.assign(static_cast<size_t>(n), 0);
  const bool window = &v == &views_[kWindowView];
  v.step_shift.assign(window ? static_cast<size_t>(n) : 0, 0);
  std::vector<int64_t> splits(static_cast<size_t>(n));
  v.max_len = 0;
  // (A window's view: its mask, the sliding one, hides what its layers do not see.)
  const float* mask = window && kv.mask_swa != nullptr ? kv.mask_swa : kv.mask;
  auto hidden = [](float m) { return std::isinf(m) && m < 0; };
  for (int64_t t = 0; t < n; ++t) {
    const int64_t len = ranges ? kv.kv_len[t] : kv.n_kv;
    const float* row = mask + t * v.mask_stride;
    int64_t last = len;  // one past the last visible cell (its own, for a decoder's token)
    while (last > 0 && hidden(row[last - 1])) --last;
    if (last == 0) last = len;  // nothing visible: keep the range (the kernel writes zeros)
    int64_t shift = 0;
    if (window) {
      int64_t first = 0;
      while (first < last && hidden(row[first])) ++first;
      shift = first < last ? first / kRangePad * kRangePad : 0;
      v.step_shift[static_cast<size_t>(t)] = static_cast<int32_t>(shift);
    }
    // (The range begins at a multiple of the padding: rounding within it rounds the cell.)
    last = std::min(len, (last + kRangePad - 1) / kRangePad * kRangePad) - shift;
    v.step_len[static_cast<size_t>(t)] = static_cast<int32_t>(last);
    v.max_len = std::max(v.max_len, last);
    splits[static_cast<size_t>(t)] = attention_decode_splits(1, dims_.n_head, last);
  }
  AttentionPlan plan;
  plan.decode_tokens.resize(static_cast<size_t>(n));
  std::iota(plan.decode_tokens.begin(), plan.decode_tokens.end(), 0);
  std::stable_sort(plan.decode_tokens.begin(), plan.decode_tokens.end(),
                   [&](int32_t a, int32_t b) { return splits[static_cast<size_t>(a)] < splits[static_cast<size_t>(b)]; });
  v.n_split = 1;
  v.split_groups.clear();
  for (size_t i = 0; i < plan.decode_tokens.size();) {
    const int64_t s = splits[static_cast<size_t>(plan.decode_tokens[i])];
    size_t j = i + 1;
    while (j < plan.decode_tokens.size() && splits[static_cast<size_t>(plan.decode_tokens[j])] == s) ++j;
    v.split_groups.emplace_back(static_cast<int64_t>(j - i), s);
    v.n_split = std::max(v.n_split, s);
    i = j;
  }
  return plan;
}

void CudaBackend::run_attention(AttentionParams ap, const ViewStep& v) {
  if (!rows_as_steps_ || v.split_groups.empty() || !attention_decode_takes_all(ap)) {
    // (Without the fast kernels the exact kernel takes every token: its
    // arithmetic never depended on the batch.)
    cuda::attention(ap, stream_);
    return;
  }
  const int32_t* listed = ap.decode_tokens;
  ap.shape_rows = 1;
  int64_t done = 0;
  for (const auto& [count, n_split] : v.split_groups) {
    ap.decode_tokens = listed + done;
    ap.n_decode_tokens = count;
    ap.n_split = n_split;
    ap.split_scratch = n_split > 1 ? scratch_[kSplit].as<float>() : nullptr;
    cuda::attention(ap, stream_);
    done += count;
  }
}

}  // namespace ferrite::cuda
