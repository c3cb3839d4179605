// An open-addressing hash map from byte strings to int32 values, built once
// and looked up with string_views (no allocation per lookup). Keys are not
// stored: each slot keeps the value and the key's hash, and the caller
// supplies the key text of a value through `key_of` at build time, so the
// map can index strings owned elsewhere (the vocabulary).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ferrite::tokenizer {

inline uint64_t hash_bytes(std::string_view s) {
  // FNV-1a over 8-byte words, finished with a murmur-style mix.
  uint64_t h = 0xcbf29ce484222325ull ^ (s.size() * 0x9E3779B97F4A7C15ull);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w = 0;
    for (int k = 0; k < 8; ++k) w |= static_cast<uint64_t>(static_cast<uint8_t>(s[i + k])) << (8 * k);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  for (; i < s.size(); ++i) h = (h ^ static_cast<uint8_t>(s[i])) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

class StringIdMap {
 public:
  static constexpr int32_t kMissing = -1;

  // Inserts `value` under `key`; a later insert of an equal key replaces
  // the earlier value. `keys` must hold the key of every value inserted so
  // far (keys[value] is that value's key) and outlive the map.
  void build(const std::vector<std::string>* keys) {
    keys_ = keys;
    size_t cap = 16;
    while (cap < keys->size() * 2) cap <<= 1;
    slots_.assign(cap, Slot{0, kMissing});
    mask_ = cap - 1;
    for (size_t i = 0; i < keys->size(); ++i) insert((*keys)[i], static_cast<int32_t>(i));
  }

  // Points the map at `keys` after the vector it indexes was moved.
  void rebind(const std::vector<std::string>* keys) { keys_ = keys; }

  int32_t find(std::string_view key) const {
    if (slots_.empty()) return kMissing;
    const uint64_t h = hash_bytes(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == kMissing) return kMissing;
      if (s.hash == h && (*keys_)[static_cast<size_t>(s.value)] == key) return s.value;
    }
  }

 private:
  struct Slot {
    uint64_t hash;
    int32_t value;
  };
  void insert(std::string_view key, int32_t value) {
    const uint64_t h = hash_bytes(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value == kMissing || (s.hash == h && (*keys_)[static_cast<size_t>(s.value)] == key)) {
        s = Slot{h, value};
        return;
      }
    }
  }
  const std::vector<std::string>* keys_ = nullptr;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// Open-addressing map from a 64-bit key (never ~0) to a small value.
template <typename V>
class U64Map {
 public:
  static constexpr uint64_t kEmpty = ~0ull;
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    keys_.assign(cap, kEmpty);
    vals_.assign(cap, V{});
    mask_ = cap - 1;
  }
  // Keeps the first value inserted for a key.
  void insert_first(uint64_t key, const V& v) {
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == key) return;
      if (keys_[i] == kEmpty) {
        keys_[i] = key;
        vals_[i] = v;
        return;
      }
    }
  }
  const V* find(uint64_t key) const {
    if (keys_.empty()) return nullptr;
    for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
      if (keys_[i] == key) return &vals_[i];
      if (keys_[i] == kEmpty) return nullptr;
    }
  }

 private:
  static uint64_t mix(uint64_t x) {
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    return x;
  }
  std::vector<uint64_t> keys_;
  std::vector<V> vals_;
  size_t mask_ = 0;
};

}  // namespace ferrite::tokenizer

namespace ferrite::tokenizer {

// Per-call memo of word -> token ids: keys are views into the text being
// encoded (which outlives the cache), ids live in one flat vector.
class WordCache {
 public:
  // Ids cached for `word`, or nullptr.
  const int32_t* find(std::string_view word, uint64_t h, uint32_t& count) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == nullptr) return nullptr;
      if (s.hash == h && s.key_len == word.size() && std::memcmp(s.key, word.data(), word.size()) == 0) {
        count = s.count;
        return ids_.data() + s.offset;
      }
    }
  }
  void insert(std::string_view word, uint64_t h, const int32_t* ids, uint32_t count) {
    if ((used_ + 1) * 2 > slots_.size()) grow();
    const auto off = static_cast<uint32_t>(ids_.size());
    ids_.insert(ids_.end(), ids, ids + count);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == nullptr) {
        slots_[i] = Slot{h, word.data(), static_cast<uint32_t>(word.size()), off, count};
        ++used_;
        return;
      }
    }
  }

 private:
  struct Slot {
    uint64_t hash;
    const char* key;
    uint32_t key_len;
    uint32_t offset;
    uint32_t count;
  };
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t cap = old.empty() ? 1024 : old.size() * 2;
    slots_.assign(cap, Slot{0, nullptr, 0, 0, 0});
    mask_ = cap - 1;
    for (const Slot& s : old) {
      if (!s.key) continue;
      for (size_t i = s.hash & mask_;; i = (i + 1) & mask_) {
        if (!slots_[i].key) {
          slots_[i] = s;
          break;
        }
      }
    }
  }
  std::vector<Slot> slots_;
  std::vector<int32_t> ids_;
  size_t mask_ = 0;
  size_t used_ = 0;
};

}  // namespace ferrite::tokenizer
