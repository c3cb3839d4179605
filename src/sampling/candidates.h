// The candidate tokens of one sampling step: what every stage of the chain
// reads and rewrites (a token id, its logit, and its probability once a stage
// has computed one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ferrite::sampling {

struct Candidate {
  int32_t id;
  float logit;
  float p;  // meaningful only after softmax()
};

// The strict total order every stage sorts by: the higher logit first, the
// lower id among equal logits. Being total, it makes every sort (full or
// partial) give one result, whatever the input order.
inline bool logit_before(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}
// The same as a function object, so that sorts inline it.
struct LogitBefore {
  bool operator()(const Candidate& a, const Candidate& b) const { return logit_before(a, b); }
};

struct Candidates {
  std::vector<Candidate> items;
  bool sorted = false;  // items are in logit_before order

  size_t size() const { return items.size(); }
  bool empty() const { return items.empty(); }
};

// One candidate per logit, id = index. NaN logits become -inf (a broken logit
// is never chosen).
void fill_candidates(Candidates& c, std::span<const float> logits);

// Puts the first min(n, size) candidates in logit_before order (the rest in
// no particular order); with n >= size the whole array is sorted.
void sort_prefix(Candidates& c, size_t n);
inline void sort_all(Candidates& c) { sort_prefix(c, c.items.size()); }

// Given that the first `from` candidates are already the best `from` in
// order, extends that to the first `to`.
void extend_sorted(Candidates& c, size_t from, size_t to);

// Calls f(candidate, value) for every candidate whose id is a key of `map`
// (a map from token id). Candidates straight from the logits (id == index)
// are addressed directly; otherwise every candidate is looked up.
template <class Map, class F>
void for_each_listed(Candidates& c, const Map& map, F&& f) {
  auto& v = c.items;
  bool direct = true;
  for (const auto& [id, value] : map) {
    const auto i = static_cast<size_t>(id);
    if (id < 0 || i >= v.size() || v[i].id != id) {
      direct = false;
      break;
    }
  }
  if (direct) {
    for (const auto& [id, value] : map) f(v[static_cast<size_t>(id)], value);
    return;
  }
  for (Candidate& x : v) {
    auto it = map.find(x.id);
    if (it != map.end()) f(x, it->second);
  }
}

// Keeps the first n candidates.
void keep_first(Candidates& c, size_t n);

// p = softmax(logit) over the candidates, in their current order. A +inf
// logit takes all the mass (shared equally among the +inf ones).
void softmax(Candidates& c);

// Removes the candidates whose logit is -inf (they can never be chosen),
// keeping the order of the rest.
void drop_impossible(Candidates& c);

// Index of the largest logit (the lowest id among equals). Empty: size().
size_t best_index(const Candidates& c);

}  // namespace ferrite::sampling
