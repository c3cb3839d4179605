// Internal to the matcher: parse stacks as hash-consed persistent lists, and
// sets of stacks as interned ids, with a cache of transitions between sets.
//
// A parse stack is a list of positions in Grammar::elements(), the top being
// the next element to match. Stacks share their tails: a node is
// (element, parent node), interned so that equal stacks have equal ids; node 0
// is the empty stack (the root rule is complete). The matcher's state is a
// set of stacks whose tops are all character elements (or the empty stack);
// sets are interned too, so the transition "set S reads code point c" is a
// cache lookup once computed: the stores grows into a lazily built automaton.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "grammar/grammar.h"

namespace ferrite::grammar {

struct MatcherLimits {
  size_t max_stacks = 8192;            // stacks in one set (ambiguity bound)
  size_t max_store_entries = 4u << 20;  // nodes + cached transitions before compaction
};

class StackStore {
 public:
  static constexpr uint32_t kEmptyStack = 0;
  static constexpr uint32_t kDeadSet = 0;  // the empty set: no parse survives

  StackStore(std::shared_ptr<const Grammar> grammar, const MatcherLimits& limits);

  const Grammar& grammar() const { return *grammar_; }
  // Set of stacks at the start of the root rule.
  uint32_t initial_set();
  // Set reached from `set` by reading code point cp (kDeadSet if none).
  uint32_t step(uint32_t set, uint32_t cp);
  const std::vector<uint32_t>& members(uint32_t set) const { return sets_[set]; }
  // True when the set contains the empty stack (the text may end here).
  bool complete(uint32_t set) const;
  // True when some stack of the set can read a code point in [lo, hi].
  bool can_read_range(uint32_t set, uint32_t lo, uint32_t hi) const;
  // Nodes, sets and cached transitions held, for the compaction policy.
  size_t entries() const { return nodes_.size() + set_ids_.size() + transitions_.size(); }
  bool over_limit() const { return entries() > limits_.max_store_entries; }
  // Copies a set of `other` into this store; returns its id here.
  uint32_t import_set(const StackStore& other, uint32_t set);

  const std::shared_ptr<const Grammar>& grammar_ptr() const { return grammar_; }
  const MatcherLimits& limits() const { return limits_; }

 private:
  struct Node {
    uint32_t elem;
    uint32_t parent;
  };
  struct VecHash {
    size_t operator()(const std::vector<uint32_t>& v) const;
  };
  static constexpr uint32_t kUnknown = UINT32_MAX;
  static constexpr uint32_t kAsciiSize = 128;

  uint32_t push(uint32_t elem, uint32_t parent);
  // Expands `stack` until every top is a character element; appends results.
  void expand(uint32_t stack);
  uint32_t intern_set(std::vector<uint32_t>& stacks);  // sorts and dedups in place
  uint32_t compute_step(uint32_t set, uint32_t cp);

  std::shared_ptr<const Grammar> grammar_;
  MatcherLimits limits_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> node_ids_;
  std::vector<std::vector<uint32_t>> sets_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, VecHash> set_ids_;
  std::vector<std::array<uint32_t, kAsciiSize>> ascii_next_;  // per set, lazily filled
  std::unordered_map<uint64_t, uint32_t> transitions_;         // (set, cp >= 128) -> set
  // Scratch for expand().
  std::vector<uint32_t> work_, out_;
  std::unordered_set<uint32_t> visited_;
};

}  // namespace ferrite::grammar
