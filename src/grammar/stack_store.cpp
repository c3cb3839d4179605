#include "grammar/stack_store.h"

#include <algorithm>

namespace ferrite::grammar {

namespace {
constexpr uint32_t kCodePointBits = 21;
}

size_t StackStore::VecHash::operator()(const std::vector<uint32_t>& v) const {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
  for (uint32_t x : v) h = (h ^ x) * 0x100000001B3ull + (h >> 29);
  return static_cast<size_t>(h);
}

StackStore::StackStore(std::shared_ptr<const Grammar> grammar, const MatcherLimits& limits)
    : grammar_(std::move(grammar)), limits_(limits) {
  nodes_.push_back({UINT32_MAX, 0});  // kEmptyStack
  std::vector<uint32_t> none;
  intern_set(none);  // kDeadSet
}

uint32_t StackStore::push(uint32_t elem, uint32_t parent) {
  const uint64_t key = (uint64_t{elem} << 32) | parent;
  auto [it, inserted] = node_ids_.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (inserted) nodes_.push_back({elem, parent});
  return it->second;
}

void StackStore::expand(uint32_t stack) {
  const auto& el = grammar_->elements();
  const auto& rules = grammar_->rules();
  if (!visited_.insert(stack).second) return;
  work_.push_back(stack);
  while (!work_.empty()) {
    const uint32_t s = work_.back();
    work_.pop_back();
    if (s == kEmptyStack || el[nodes_[s].elem].kind == ElementKind::Chars) {
      out_.push_back(s);
      if (out_.size() > limits_.max_stacks) {
        throw InvalidArgument("grammar: more than " + std::to_string(limits_.max_stacks) +
                              " simultaneous parse stacks; the grammar is too ambiguous");
      }
      continue;
    }
    const uint32_t e = nodes_[s].elem;  // a rule reference
    const uint32_t parent = nodes_[s].parent;
    const uint32_t cont = el[e + 1].kind == ElementKind::End ? parent : push(e + 1, parent);
    for (uint32_t alt : rules[el[e].value].alternatives) {
      const uint32_t t = el[alt].kind == ElementKind::End ? cont : push(alt, cont);
      if (visited_.insert(t).second) work_.push_back(t);
    }
    if (visited_.size() > 16 * limits_.max_stacks) {
      throw InvalidArgument("grammar: expansion visits too many parse stacks; the grammar is "
                            "too ambiguous");
    }
  }
}

uint32_t StackStore::intern_set(std::vector<uint32_t>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  auto it = set_ids_.find(stacks);
  if (it != set_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(sets_.size());
  sets_.push_back(stacks);
  set_ids_.emplace(stacks, id);
  std::array<uint32_t, kAsciiSize> unknown;
  unknown.fill(kUnknown);
  ascii_next_.push_back(unknown);
  return id;
}

uint32_t StackStore::initial_set() {
  const auto& el = grammar_->elements();
  visited_.clear();
  out_.clear();
  for (uint32_t alt : grammar_->rules()[grammar_->root()].alternatives) {
    expand(el[alt].kind == ElementKind::End ? kEmptyStack : push(alt, kEmptyStack));
  }
  return intern_set(out_);
}

uint32_t StackStore::step(uint32_t set, uint32_t cp) {
  if (cp < kAsciiSize) {
    uint32_t& slot = ascii_next_[set][cp];
    if (slot == kUnknown) {
      const uint32_t next = compute_step(set, cp);
      ascii_next_[set][cp] = next;  // ascii_next_ may have grown: index again
      return next;
    }
    return slot;
  }
  const uint64_t key = (uint64_t{set} << kCodePointBits) | cp;
  auto it = transitions_.find(key);
  if (it != transitions_.end()) return it->second;
  const uint32_t next = compute_step(set, cp);
  transitions_.emplace(key, next);
  return next;
}

uint32_t StackStore::compute_step(uint32_t set, uint32_t cp) {
  const auto& el = grammar_->elements();
  const auto& cs = grammar_->char_sets();
  visited_.clear();
  out_.clear();
  // members() may be reallocated by intern_set below, but not during this loop.
  for (uint32_t s : sets_[set]) {
    if (s == kEmptyStack) continue;
    const uint32_t e = nodes_[s].elem;
    if (!cs[el[e].value].contains(cp)) continue;
    const uint32_t parent = nodes_[s].parent;
    expand(el[e + 1].kind == ElementKind::End ? parent : push(e + 1, parent));
  }
  return intern_set(out_);
}

bool StackStore::complete(uint32_t set) const {
  const auto& m = sets_[set];
  return !m.empty() && m.front() == kEmptyStack;  // sorted: 0 comes first
}

bool StackStore::can_read_range(uint32_t set, uint32_t lo, uint32_t hi) const {
  const auto& el = grammar_->elements();
  const auto& cs = grammar_->char_sets();
  for (uint32_t s : sets_[set]) {
    if (s != kEmptyStack && cs[el[nodes_[s].elem].value].intersects(lo, hi)) return true;
  }
  return false;
}

uint32_t StackStore::import_set(const StackStore& other, uint32_t set) {
  std::vector<uint32_t> stacks;
  std::vector<uint32_t> path;
  for (uint32_t s : other.sets_[set]) {
    path.clear();
    for (uint32_t n = s; n != kEmptyStack; n = other.nodes_[n].parent) path.push_back(other.nodes_[n].elem);
    uint32_t mine = kEmptyStack;
    for (auto it = path.rbegin(); it != path.rend(); ++it) mine = push(*it, mine);
    stacks.push_back(mine);
  }
  return intern_set(stacks);
}

}  // namespace ferrite::grammar
