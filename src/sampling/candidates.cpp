#include "sampling/candidates.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ferrite::sampling {
namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr float kPosInf = std::numeric_limits<float>::infinity();
}  // namespace

void fill_candidates(Candidates& c, std::span<const float> logits) {
  c.items.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = std::isnan(logits[i]) ? kNegInf : logits[i];
    c.items[i] = {static_cast<int32_t>(i), l, 0.0f};
  }
  c.sorted = false;
}

namespace {
// Below this many wanted, a heap-based partial sort; above, selection first.
constexpr size_t kPartialSortLimit = 1024;
}  // namespace

void extend_sorted(Candidates& c, size_t from, size_t to) {
  if (c.sorted) return;
  auto& v = c.items;
  const auto begin = v.begin() + static_cast<std::ptrdiff_t>(std::min(from, v.size()));
  if (to >= v.size()) {
    std::sort(begin, v.end(), LogitBefore{});
    c.sorted = true;
    return;
  }
  if (to <= from) return;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(to);
  if (to - from <= kPartialSortLimit) {
    std::partial_sort(begin, mid, v.end(), LogitBefore{});
  } else {
    std::nth_element(begin, mid, v.end(), LogitBefore{});
    std::sort(begin, mid, LogitBefore{});
  }
}

void sort_prefix(Candidates& c, size_t n) { extend_sorted(c, 0, n); }

void keep_first(Candidates& c, size_t n) {
  if (n < c.items.size()) c.items.resize(n);
}

void softmax(Candidates& c) {
  auto& v = c.items;
  if (v.empty()) return;
  float max = v[0].logit;
  for (const Candidate& x : v) max = std::max(max, x.logit);
  if (max == kPosInf) {
    size_t n_inf = 0;
    for (const Candidate& x : v) n_inf += x.logit == kPosInf;
    for (Candidate& x : v) x.p = x.logit == kPosInf ? 1.0f / static_cast<float>(n_inf) : 0.0f;
    return;
  }
  if (max == kNegInf) {  // nothing possible: a uniform distribution avoids 0/0
    for (Candidate& x : v) x.p = 1.0f / static_cast<float>(v.size());
    return;
  }
  double sum = 0.0;
  for (Candidate& x : v) {
    x.p = std::exp(x.logit - max);
    sum += x.p;
  }
  for (Candidate& x : v) x.p = static_cast<float>(x.p / sum);
}

void drop_impossible(Candidates& c) {
  auto& v = c.items;
  v.erase(std::remove_if(v.begin(), v.end(), [](const Candidate& x) { return x.logit == kNegInf; }), v.end());
}

size_t best_index(const Candidates& c) {
  const auto& v = c.items;
  if (v.empty()) return 0;
  if (c.sorted) return 0;
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (logit_before(v[i], v[best])) best = i;
  }
  return best;
}

}  // namespace ferrite::sampling
