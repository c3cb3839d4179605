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
