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
// splits and warps: each token's range is cut after its last visible cell,
// and the tokens are launched in groups of one split count with
// shape_rows = 1.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "cuda/backend/cuda_backend.h"

namespace ferrite::cuda {

AttentionPlan CudaBackend::plan_rows_as_steps(const backend::ForwardBatch& batch, const backend::KvView& kv) {
  const int64_t n = batch.n_tokens;
  const bool ranges = kv.kv_begin != nullptr;
  step_len_.assign(static_cast<size_t>(n), 0);
  std::vector<int64_t> splits(static_cast<size_t>(n));
  max_len_ = 0;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t len = ranges ? kv.kv_len[t] : kv.n_kv;
    const float* row = kv.mask + t * mask_stride_;
    int64_t last = len;  // one past the last visible cell (its own, for a decoder's token)
    while (last > 0 && std::isinf(row[last - 1]) && row[last - 1] < 0) --last;
    if (last == 0) last = len;  // nothing visible: keep the range (the kernel writes zeros)
    step_len_[static_cast<size_t>(t)] = static_cast<int32_t>(last);
    max_len_ = std::max(max_len_, last);
    splits[static_cast<size_t>(t)] = attention_decode_splits(1, dims_.n_head, last);
  }
  AttentionPlan plan;
  plan.decode_tokens.resize(static_cast<size_t>(n));
  std::iota(plan.decode_tokens.begin(), plan.decode_tokens.end(), 0);
  std::stable_sort(plan.decode_tokens.begin(), plan.decode_tokens.end(),
                   [&](int32_t a, int32_t b) { return splits[static_cast<size_t>(a)] < splits[static_cast<size_t>(b)]; });
  n_split_ = 1;
  for (size_t i = 0; i < plan.decode_tokens.size();) {
    const int64_t s = splits[static_cast<size_t>(plan.decode_tokens[i])];
    size_t j = i + 1;
    while (j < plan.decode_tokens.size() && splits[static_cast<size_t>(plan.decode_tokens[j])] == s) ++j;
    split_groups_.emplace_back(static_cast<int64_t>(j - i), s);
    n_split_ = std::max(n_split_, s);
    i = j;
  }
  return plan;
}

void CudaBackend::run_attention(AttentionParams ap) {
  if (!rows_as_steps_ || split_groups_.empty() || !attention_decode_takes_all(ap)) {
    // (Without the fast kernels the exact kernel takes every token: its
    // arithmetic never depended on the batch.)
    cuda::attention(ap, stream_);
    return;
  }
  const int32_t* listed = ap.decode_tokens;
  ap.shape_rows = 1;
  int64_t done = 0;
  for (const auto& [count, n_split] : split_groups_) {
    ap.decode_tokens = listed + done;
    ap.n_decode_tokens = count;
    ap.n_split = n_split;
    ap.split_scratch = n_split > 1 ? scratch_[kSplit].as<float>() : nullptr;
    cuda::attention(ap, stream_);
    done += count;
  }
}

}  // namespace ferrite::cuda
