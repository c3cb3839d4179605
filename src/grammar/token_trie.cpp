#include "grammar/token_trie.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <deque>

namespace ferrite::grammar {

namespace {
std::atomic<uint64_t> g_next_trie_id{1};
}

TokenTrie::TokenTrie(const std::vector<std::string>& pieces, const std::vector<int32_t>& eog)
    : n_vocab_(pieces.size()), eog_(eog), id_(g_next_trie_id++) {
  std::vector<bool> is_eog(pieces.size(), false);
  for (int32_t t : eog) {
    if (t >= 0 && static_cast<size_t>(t) < pieces.size()) is_eog[static_cast<size_t>(t)] = true;
  }
  std::vector<uint32_t> order;
  for (uint32_t t = 0; t < pieces.size(); ++t) {
    if (!is_eog[t] && !pieces[t].empty()) order.push_back(t);
  }
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return pieces[a] < pieces[b]; });

  // Breadth-first: each node owns a range of `order` sharing its prefix of
  // length `depth`; its children are allocated together.
  struct Pending {
    uint32_t node;
    size_t lo, hi, depth;
  };
  nodes_.push_back(Node{});
  std::deque<Pending> queue{{0, 0, order.size(), 0}};
  while (!queue.empty()) {
    const Pending p = queue.front();
    queue.pop_front();
    size_t i = p.lo;
    nodes_[p.node].first_token = static_cast<uint32_t>(tokens_.size());
    while (i < p.hi && pieces[order[i]].size() == p.depth) tokens_.push_back(order[i++]);
    nodes_[p.node].n_tokens = static_cast<uint32_t>(tokens_.size()) - nodes_[p.node].first_token;
    nodes_[p.node].first_child = static_cast<uint32_t>(nodes_.size());
    while (i < p.hi) {
      const auto byte = static_cast<uint8_t>(pieces[order[i]][p.depth]);
      size_t j = i;
      while (j < p.hi && static_cast<uint8_t>(pieces[order[j]][p.depth]) == byte) ++j;
      Node child;
      child.byte = byte;
      const auto id = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back(child);
      queue.push_back({id, i, j, p.depth + 1});
      i = j;
    }
    nodes_[p.node].n_children = static_cast<uint32_t>(nodes_.size()) - nodes_[p.node].first_child;
  }
}

size_t TokenMask::count() const {
  size_t n = 0;
  for (uint64_t w : words_) n += static_cast<size_t>(std::popcount(w));
  return n;
}

std::vector<bool> TokenMask::to_vector() const {
  std::vector<bool> out(n_);
  for (size_t i = 0; i < n_; ++i) out[i] = test(i);
  return out;
}

}  // namespace ferrite::grammar
