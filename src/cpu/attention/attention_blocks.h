// The query blocks of the vector attention kernels (attention_avx2.cpp,
// attention_avx512.cpp) and the loop that hands them to the threads: a
// block is the heads of one GQA group for consecutive tokens that read the
// same cells. Each kernel brings its Worker; the split and the order are
// shared.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "cpu/attention/attention.h"
#include "cpu/vec_ops.h"

namespace ferrite::cpu {

struct AttentionBlock {
  int64_t t0 = 0, n_tok = 0, g = 0;  // first token, tokens, KV head (GQA group)
};

// Block starts of a's tokens, at most max_tokens per block, then a.n_tokens
// (attention.cpp).
void split_attention_tokens(const AttentionArgs& a, int64_t max_tokens, std::vector<int64_t>& starts);

// Worker(a, ops, buf, live).run(block) over every block of a, blocks of up
// to block_queries queries (tokens x group heads, at most max_tokens
// tokens). Items are taken in order by whichever thread is free; later
// tokens (more visible cells under a causal mask) come first. Instantiate
// only with a Worker of the calling file's anonymous namespace (the
// instance then stays in that file, compiled for its level).
template <typename Worker>
void run_attention_blocks(const AttentionArgs& a, ThreadPool& pool, AttentionScratch& scratch, const VecOps& ops,
                          int64_t block_queries, int64_t max_tokens) {
  if (a.n_tokens <= 0) return;
  const size_t n_threads = static_cast<size_t>(pool.size());
  if (scratch.block.size() < n_threads) scratch.block.resize(n_threads);
  if (scratch.live.size() < n_threads) scratch.live.resize(n_threads);
  const int64_t group = a.n_head / a.n_head_kv;
  split_attention_tokens(a, std::clamp<int64_t>(block_queries / group, 1, max_tokens), scratch.token_blocks);
  const std::vector<int64_t>& starts = scratch.token_blocks;
  const int64_t n_blocks = static_cast<int64_t>(starts.size()) - 1;
  const int64_t n_items = n_blocks * a.n_head_kv;
  std::atomic<int64_t> next{0};
  pool.run([&](int ith, int) {
    Worker w(a, ops, scratch.block[static_cast<size_t>(ith)], scratch.live[static_cast<size_t>(ith)]);
    for (int64_t item = next.fetch_add(1); item < n_items; item = next.fetch_add(1)) {
      const auto blk = static_cast<size_t>(n_blocks - 1 - item / a.n_head_kv);
      w.run(AttentionBlock{starts[blk], starts[blk + 1] - starts[blk], item % a.n_head_kv});
    }
  }, 2 * a.n_tokens * a.n_head * (a.kv_begin != nullptr ? std::max<int64_t>(a.mask_stride, 1) : a.n_kv) * a.head_dim);
}

}  // namespace ferrite::cpu
