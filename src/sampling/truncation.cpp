#include "sampling/truncation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace ferrite::sampling {
namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// top_p first sorts only this many candidates of a large unsorted list, which
// nearly always hold the nucleus; it sorts the rest only when they do not.
constexpr size_t kTopPFirstSort = 256;
constexpr size_t kTopPGrowth = 4;
}  // namespace

void top_k(Candidates& c, int32_t k) {
  if (k <= 0) return;
  const size_t n = std::min(static_cast<size_t>(k), c.size());
  sort_prefix(c, n);
  keep_first(c, n);
  c.sorted = true;
}

void top_p(Candidates& c, float p, size_t min_keep) {
  if (p >= 1.0f || c.empty()) return;
  softmax(c);
  size_t sorted_upto = c.sorted ? c.size() : std::min(kTopPFirstSort, c.size());
  sort_prefix(c, sorted_upto);
  double cum = 0.0;
  size_t keep = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    if (i == sorted_upto) {  // the nucleus is larger than the sorted prefix: extend it
      const size_t next = std::min(c.size(), sorted_upto * kTopPGrowth);
      extend_sorted(c, sorted_upto, next);
      sorted_upto = next;
    }
    cum += c.items[i].p;
    if (cum >= p && i + 1 >= min_keep) {
      keep = i + 1;
      break;
    }
  }
  keep_first(c, keep);
  c.sorted = true;
}

void min_p(Candidates& c, float p, size_t min_keep) {
  if (p <= 0.0f || c.empty()) return;
  float max_logit = c.items[0].logit;
  for (const Candidate& x : c.items) max_logit = std::max(max_logit, x.logit);
  const float min_logit = max_logit + std::log(p);
  size_t n_pass = 0;
  for (const Candidate& x : c.items) n_pass += x.logit >= min_logit;
  if (n_pass >= std::max<size_t>(min_keep, 1)) {
    auto& v = c.items;  // filter in place, keeping the order
    v.erase(std::remove_if(v.begin(), v.end(), [&](const Candidate& x) { return x.logit < min_logit; }), v.end());
    return;
  }
  // Too few pass: the best max(min_keep, 1) in logit order.
  const size_t keep = std::min(std::max<size_t>(min_keep, 1), c.size());
  sort_prefix(c, keep);
  keep_first(c, keep);
  c.sorted = true;
}

void typical_p(Candidates& c, float p, size_t min_keep) {
  if (p >= 1.0f || c.empty()) return;
  sort_all(c);
  softmax(c);
  double entropy = 0.0;
  for (const Candidate& x : c.items) {
    if (x.p > 0.0f) entropy -= static_cast<double>(x.p) * std::log(static_cast<double>(x.p));
  }
  std::vector<double> shift(c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    const double p_i = c.items[i].p;
    shift[i] = p_i > 0.0 ? std::fabs(-std::log(p_i) - entropy) : std::numeric_limits<double>::infinity();
  }
  std::vector<size_t> order(c.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Stable: among equally typical candidates the more likely comes first.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return shift[a] < shift[b]; });
  double cum = 0.0;
  size_t keep = order.size();
  for (size_t i = 0; i < order.size(); ++i) {
    cum += c.items[order[i]].p;
    if (cum > p && i + 1 >= min_keep) {
      keep = i + 1;
      break;
    }
  }
  std::vector<Candidate> kept(keep);
  for (size_t i = 0; i < keep; ++i) kept[i] = c.items[order[i]];
  c.items = std::move(kept);
  c.sorted = false;
}

void top_n_sigma(Candidates& c, float n) {
  if (n <= 0.0f || c.size() <= 1) return;
  float max_logit = kNegInf;
  double sum = 0.0;
  size_t n_finite = 0;
  for (const Candidate& x : c.items) {
    if (x.logit == kNegInf) continue;
    max_logit = std::max(max_logit, x.logit);
    sum += x.logit;
    ++n_finite;
  }
  if (n_finite == 0) return;
  const double mean = sum / static_cast<double>(n_finite);
  double acc = 0.0;
  for (const Candidate& x : c.items) {
    if (x.logit != kNegInf) acc += (x.logit - mean) * (x.logit - mean);
  }
  const double sigma = std::sqrt(acc / static_cast<double>(n_finite));
  const double floor = static_cast<double>(max_logit) - static_cast<double>(n) * sigma;
  auto& v = c.items;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const Candidate& x) { return x.logit < floor; }), v.end());
}

void xtc(Candidates& c, float probability, float threshold, size_t min_keep, Rng& rng) {
  if (probability <= 0.0f || threshold > kXtcMaxThreshold || c.size() < 2) return;
  if (rng.uniform() > probability) return;
  sort_all(c);
  softmax(c);
  size_t last_above = 0;  // index of the least likely candidate with p >= threshold
  for (size_t i = 0; i < c.size(); ++i) {
    if (c.items[i].p >= threshold) {
      last_above = i;
    } else {
      break;
    }
  }
  if (last_above == 0 || c.size() - last_above < min_keep) return;
  c.items.erase(c.items.begin(), c.items.begin() + static_cast<std::ptrdiff_t>(last_above));
}

}  // namespace ferrite::sampling
