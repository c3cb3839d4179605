// Byte-level BPE. Each pre-tokenized word starts as one symbol per byte
// (the byte's printable stand-in codepoint of the GPT-2 encoding) and the
// adjacent pair with the lowest merge rank is merged until none applies
// (ties: leftmost first). Symbols are tracked by token id, so a merge lookup
// is one hash probe on the pair of ids; a per-call cache reuses the ids of
// words seen before.
#include <algorithm>
#include <unordered_map>

#include "tokenizer/encoders.h"
#include "tokenizer/unicode.h"

namespace ferrite::tokenizer {
namespace {

constexpr size_t kMaxCachedWordLen = 48;

uint64_t pair_key(int32_t l, int32_t r) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
}

std::string encode_bytes(std::string_view raw) {
  const ByteEncoder& enc = ByteEncoder::get();
  std::string s;
  for (char c : raw) s.append(enc.encode(static_cast<uint8_t>(c)));
  return s;
}

struct Bigram {
  int32_t rank;
  int32_t left, right;
  uint32_t size;
  int32_t merged;
};

// Heap order: lowest rank on top, ties to the lowest left index.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

BpeEncoder::BpeEncoder(const Vocab& v) : v_(v), pre_([&] {
  PreTokenizerInfo info;
  find_pretokenizer(v.pre, info);
  return info.regexes;
}()) {
  const ByteEncoder& enc = ByteEncoder::get();
  for (int b = 0; b < 256; ++b) byte_token_[b] = v.find(enc.encode(static_cast<uint8_t>(b)));

  merges_.reserve(v.merges.size());
  for (size_t rank = 0; rank < v.merges.size(); ++rank) {
    const auto& [a, b] = v.merges[rank];
    if (a.empty() && b.empty()) continue;
    const int32_t la = v.find(a);
    const int32_t lb = v.find(b);
    const int32_t merged = v.find(a + b);
    if (la >= 0 && lb >= 0) {
      merges_.insert_first(pair_key(la, lb), Merge{static_cast<int32_t>(rank), merged});
    } else {
      std::string key = a;
      key.push_back('\0');
      key += b;
      text_merges_.emplace(std::move(key), static_cast<int32_t>(rank));
    }
  }

  // Raw bytes of every token whose text is entirely byte-encoded.
  raw_text_.resize(v.text.size());
  for (size_t id = 0; id < v.text.size(); ++id) {
    const std::string& t = v.text[id];
    std::string raw;
    bool ok = true;
    for (size_t i = 0; i < t.size() && ok;) {
      uint32_t cpt = 0;
      const size_t len = decode_utf8_strict(t, i, cpt);
      const int b = len ? enc.decode(cpt) : -1;
      if (b < 0) {
        ok = false;
      } else {
        raw.push_back(static_cast<char>(b));
        i += len;
      }
    }
    if (ok) raw_text_[id] = std::move(raw);
  }
  raw_to_id_.build(&raw_text_);
}

BpeEncoder::Merge BpeEncoder::find_merge(std::string_view word, const Symbol& l, const Symbol& r) const {
  if (l.id >= 0 && r.id >= 0) {
    const Merge* m = merges_.find(pair_key(l.id, r.id));
    return m ? *m : Merge{};
  }
  if (text_merges_.empty()) return Merge{};
  const std::string a = encode_bytes(word.substr(l.begin, l.len));
  const std::string b = encode_bytes(word.substr(r.begin, r.len));
  std::string key = a;
  key.push_back('\0');
  key += b;
  const auto it = text_merges_.find(key);
  if (it == text_merges_.end()) return Merge{};
  return Merge{it->second, v_.find(a + b)};
}

void BpeEncoder::emit_symbol(std::string_view word, const Symbol& s, std::vector<int32_t>& out) const {
  if (s.id >= 0) {
    out.push_back(s.id);
    return;
  }
  // No token for the whole symbol: each byte of its encoded text on its own.
  for (char c : encode_bytes(word.substr(s.begin, s.len))) {
    const int32_t id = v_.find(std::string_view(&c, 1));
    if (id >= 0) out.push_back(id);
  }
}

void BpeEncoder::encode_word(std::string_view word, std::vector<int32_t>& out, std::vector<Symbol>& syms,
                             std::vector<uint64_t>& /*unused*/) const {
  if (v_.ignore_merges) {
    const int32_t id = raw_to_id_.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  const auto n = static_cast<int32_t>(word.size());
  if (n == 1) {
    emit_symbol(word, Symbol{0, 1, byte_token_[static_cast<uint8_t>(word[0])], -1, -1}, out);
    return;
  }
  syms.clear();
  for (int32_t i = 0; i < n; ++i) {
    syms.push_back(Symbol{static_cast<uint32_t>(i), 1, byte_token_[static_cast<uint8_t>(word[static_cast<size_t>(i)])],
                          i - 1, i + 1 == n ? -1 : i + 1});
  }
  thread_local std::vector<Bigram> heap;
  heap.clear();
  auto add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const Symbol& sl = syms[static_cast<size_t>(l)];
    const Symbol& sr = syms[static_cast<size_t>(r)];
    const Merge m = find_merge(word, sl, sr);
    if (m.rank < 0) return;
    heap.push_back(Bigram{m.rank, l, r, sl.len + sr.len, m.merged});
    std::push_heap(heap.begin(), heap.end(), BigramLess{});
  };
  for (int32_t i = 1; i < n; ++i) add(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BigramLess{});
    const Bigram bg = heap.back();
    heap.pop_back();
    Symbol& l = syms[static_cast<size_t>(bg.left)];
    Symbol& r = syms[static_cast<size_t>(bg.right)];
    if (l.len == 0 || r.len == 0 || l.len + r.len != bg.size) continue;  // stale
    l.len += r.len;
    l.id = bg.merged;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[static_cast<size_t>(r.next)].prev = bg.left;
    add(l.prev, bg.left);
    add(bg.left, l.next);
  }
  for (int32_t i = 0; i != -1; i = syms[static_cast<size_t>(i)].next) emit_symbol(word, syms[static_cast<size_t>(i)], out);
}

void BpeEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<Span> words;
  pre_.split(text, words);
  std::vector<Symbol> syms;
  std::vector<uint64_t> scratch;
  WordCache cache;
  const bool use_cache = words.size() > 64;
  for (const Span& s : words) {
    const std::string_view word = text.substr(s.begin, s.end - s.begin);
    if (!use_cache || word.size() > kMaxCachedWordLen) {
      encode_word(word, out, syms, scratch);
      continue;
    }
    const uint64_t h = hash_bytes(word);
    uint32_t count = 0;
    if (const int32_t* ids = cache.find(word, h, count)) {
      out.insert(out.end(), ids, ids + count);
      continue;
    }
    const size_t before = out.size();
    encode_word(word, out, syms, scratch);
    cache.insert(word, h, out.data() + before, static_cast<uint32_t>(out.size() - before));
  }
}

}  // namespace ferrite::tokenizer
