#include "grammar/matcher.h"

namespace ferrite::grammar {

namespace {
// Masks kept per matcher family; cleared wholesale when full.
constexpr size_t kMaxCachedMasks = 64;
}  // namespace

size_t Matcher::MaskKeyHash::operator()(const MaskKey& k) const {
  uint64_t h = k.trie * 0x9E3779B97F4A7C15ull;
  h ^= (uint64_t{k.set} << 24) ^ (uint64_t{k.utf8_value} << 3) ^ k.utf8_remaining;
  return static_cast<size_t>(h * 0xBF58476D1CE4E5B9ull);
}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, const MatcherLimits& limits)
    : store_(std::make_shared<StackStore>(std::move(grammar), limits)),
      masks_(std::make_shared<MaskCache>()) {
  set_ = store_->initial_set();
}

Matcher::Matcher(const Grammar& grammar, const MatcherLimits& limits)
    : Matcher(std::make_shared<const Grammar>(grammar), limits) {}

Matcher::Matcher(std::shared_ptr<StackStore> store, std::shared_ptr<MaskCache> masks,
                 uint32_t set, Utf8State pending)
    : store_(std::move(store)), masks_(std::move(masks)), set_(set), pending_(pending) {}

bool Matcher::walk(std::string_view bytes, uint32_t* set, Utf8State* pending) {
  for (char c : bytes) {
    uint32_t cp = 0;
    switch (utf8_feed(*pending, static_cast<uint8_t>(c), &cp)) {
      case Utf8Step::Invalid:
        return false;
      case Utf8Step::Pending: {
        uint32_t lo = 0, hi = 0;
        utf8_pending_range(*pending, &lo, &hi);
        if (!store_->can_read_range(*set, lo, hi)) return false;
        break;
      }
      case Utf8Step::Complete:
        *set = store_->step(*set, cp);
        if (*set == StackStore::kDeadSet) return false;
        break;
    }
  }
  return true;
}

bool Matcher::accept(uint32_t cp) {
  if (!pending_.idle()) return false;
  const uint32_t next = store_->step(set_, cp);
  if (next == StackStore::kDeadSet) return false;
  set_ = next;
  maybe_compact();
  return true;
}

bool Matcher::accept_bytes(std::string_view bytes) {
  uint32_t set = set_;
  Utf8State pending = pending_;
  if (!walk(bytes, &set, &pending)) return false;
  set_ = set;
  pending_ = pending;
  maybe_compact();
  return true;
}

bool Matcher::allows(std::string_view piece) {
  if (piece.empty()) return false;
  uint32_t set = set_;
  Utf8State pending = pending_;
  return walk(piece, &set, &pending);
}

bool Matcher::is_complete() const { return pending_.idle() && store_->complete(set_); }

bool Matcher::is_finished() const {
  return is_complete() && store_->members(set_).size() == 1;
}

const TokenMask& Matcher::allowed(const TokenTrie& trie) {
  const MaskKey key{trie.id(), set_, pending_.value, pending_.remaining};
  auto it = masks_->find(key);
  if (it == masks_->end()) {
    if (masks_->size() >= kMaxCachedMasks) masks_->clear();
    TokenMask mask(trie.n_vocab());
    fill_mask(trie, mask);
    it = masks_->emplace(key, std::move(mask)).first;
  }
  // The cached mask leaves EOG tokens clear; they depend on the pending bytes
  // only through the key, so set them on a copy.
  scratch_ = it->second;
  if (is_complete()) {
    for (int32_t t : trie.eog()) {
      if (t >= 0 && static_cast<size_t>(t) < scratch_.size()) scratch_.set(static_cast<size_t>(t));
    }
  }
  maybe_compact();
  return scratch_;
}

void Matcher::fill_mask(const TokenTrie& trie, TokenMask& mask) {
  struct Frame {
    uint32_t node;
    uint32_t set;
    Utf8State utf8;
  };
  const auto& nodes = trie.nodes();
  const auto& tokens = trie.tokens();
  std::vector<Frame> stack{{0, set_, pending_}};
  while (!stack.empty()) {
    const Frame f = stack.back();
    stack.pop_back();
    const TokenTrie::Node& node = nodes[f.node];
    if (node.n_tokens > 0 && f.node != 0) {
      // Reaching this node means every byte so far was accepted (a pending
      // sequence was checked against the stacks when it was extended).
      for (uint32_t i = 0; i < node.n_tokens; ++i) mask.set(tokens[node.first_token + i]);
    }
    for (uint32_t c = 0; c < node.n_children; ++c) {
      const uint32_t child = node.first_child + c;
      Utf8State utf8 = f.utf8;
      uint32_t cp = 0;
      switch (utf8_feed(utf8, nodes[child].byte, &cp)) {
        case Utf8Step::Invalid:
          break;
        case Utf8Step::Pending: {
          uint32_t lo = 0, hi = 0;
          utf8_pending_range(utf8, &lo, &hi);
          if (store_->can_read_range(f.set, lo, hi)) stack.push_back({child, f.set, utf8});
          break;
        }
        case Utf8Step::Complete: {
          const uint32_t next = store_->step(f.set, cp);
          if (next != StackStore::kDeadSet) stack.push_back({child, next, utf8});
          break;
        }
      }
    }
  }
}

std::vector<bool> Matcher::allowed(const std::vector<std::string>& pieces,
                                   const std::vector<int32_t>& eog) {
  const TokenTrie trie(pieces, eog);
  std::vector<bool> out = allowed(trie).to_vector();
  masks_->clear();  // the trie dies here; its masks are useless
  return out;
}

Matcher Matcher::clone() const { return Matcher(store_, masks_, set_, pending_); }

Matcher Matcher::detach() const {
  auto store = std::make_shared<StackStore>(store_->grammar_ptr(), store_->limits());
  const uint32_t set = store->import_set(*store_, set_);
  return Matcher(std::move(store), std::make_shared<MaskCache>(), set, pending_);
}

void Matcher::reset() {
  set_ = store_->initial_set();
  pending_ = {};
}

void Matcher::maybe_compact() {
  if (!store_->over_limit()) return;
  // Start a fresh store holding only the current state; clones keep the old one.
  auto store = std::make_shared<StackStore>(store_->grammar_ptr(), store_->limits());
  set_ = store->import_set(*store_, set_);
  store_ = std::move(store);
  masks_ = std::make_shared<MaskCache>();
}

}  // namespace ferrite::grammar
