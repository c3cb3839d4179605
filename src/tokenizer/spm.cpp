// SentencePiece-style BPE: start from UTF-8 characters and repeatedly merge
// the adjacent pair whose concatenation is the vocabulary token with the
// highest score (ties: leftmost first). Characters that end up in no token
// fall back to their <0xXX> byte tokens.
#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "tokenizer/encoders.h"
#include "tokenizer/unicode.h"

namespace ferrite::tokenizer {
namespace {

struct SpmSymbol {
  uint32_t begin;
  uint32_t len;  // 0 once merged into its left neighbour
  int32_t prev, next;
};

struct SpmBigram {
  float score;
  int32_t left, right;
  uint32_t size;
};

// Heap order: highest score on top, ties to the lowest left index.
struct SpmLess {
  bool operator()(const SpmBigram& a, const SpmBigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

SpmEncoder::SpmEncoder(const Vocab& v) : v_(v) {
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    int32_t id = v.find(hex);
    if (id < 0) id = v.find(std::string(1, static_cast<char>(b)));
    if (id < 0) id = v.unk;
    byte_token_[b] = id;
  }
  for (const std::string& t : v.text) {
    size_t prev = 0;  // start of the previous character
    for (size_t i = 0; i < t.size();) {
      const size_t len = std::min(utf8_seq_len(static_cast<uint8_t>(t[i])), t.size() - i);
      if (i > 0 && t.compare(i, kEscapedSpace.size(), kEscapedSpace) == 0 &&
          t.compare(prev, i - prev, kEscapedSpace) != 0) {
        joins_space_.insert(t.substr(prev, i - prev));
      }
      prev = i;
      i += len;
    }
  }
}

void SpmEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  constexpr size_t kMaxCachedSegment = 64;
  WordCache cache;
  auto emit = [&](std::string_view seg) {
    if (seg.size() > kMaxCachedSegment) {
      encode_segment(seg, out);
      return;
    }
    const uint64_t h = hash_bytes(seg);
    uint32_t count = 0;
    if (const int32_t* ids = cache.find(seg, h, count)) {
      out.insert(out.end(), ids, ids + count);
      return;
    }
    const size_t before = out.size();
    encode_segment(seg, out);
    cache.insert(seg, h, out.data() + before, static_cast<uint32_t>(out.size() - before));
  };
  size_t seg_begin = 0;
  size_t prev = 0;  // start of the previous symbol
  for (size_t off = 0; off < text.size();) {
    const size_t len = std::min(utf8_seq_len(static_cast<uint8_t>(text[off])), text.size() - off);
    if (off > seg_begin && len == kEscapedSpace.size() && text.compare(off, len, kEscapedSpace) == 0) {
      const std::string_view before = text.substr(prev, off - prev);
      if (before != kEscapedSpace && (joins_space_.empty() || !joins_space_.count(std::string(before)))) {
        emit(text.substr(seg_begin, off - seg_begin));
        seg_begin = off;
      }
    }
    prev = off;
    off += len;
  }
  if (seg_begin < text.size()) emit(text.substr(seg_begin));
}

void SpmEncoder::encode_segment(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  thread_local std::vector<SpmSymbol> syms;  // reused: no allocation per segment
  thread_local std::vector<SpmBigram> heap;
  syms.clear();
  heap.clear();
  for (size_t off = 0; off < text.size();) {
    const size_t len = std::min(utf8_seq_len(static_cast<uint8_t>(text[off])), text.size() - off);
    const auto idx = static_cast<int32_t>(syms.size());
    syms.push_back(SpmSymbol{static_cast<uint32_t>(off), static_cast<uint32_t>(len), idx - 1,
                             off + len == text.size() ? -1 : idx + 1});
    off += len;
  }

  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const uint32_t size = syms[static_cast<size_t>(l)].len + syms[static_cast<size_t>(r)].len;
    const int32_t id = v_.find(text.substr(syms[static_cast<size_t>(l)].begin, size));
    if (id < 0) return;
    heap.push_back(SpmBigram{v_.score[static_cast<size_t>(id)], l, r, size});
    std::push_heap(heap.begin(), heap.end(), SpmLess{});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_add(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), SpmLess{});
    const SpmBigram bg = heap.back();
    heap.pop_back();
    SpmSymbol& l = syms[static_cast<size_t>(bg.left)];
    SpmSymbol& r = syms[static_cast<size_t>(bg.right)];
    if (l.len == 0 || r.len == 0 || l.len + r.len != bg.size) continue;  // stale
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[static_cast<size_t>(r.next)].prev = bg.left;
    try_add(l.prev, bg.left);
    try_add(bg.left, l.next);
  }

  for (int32_t i = 0; i != -1; i = syms[static_cast<size_t>(i)].next) {
    const SpmSymbol& s = syms[static_cast<size_t>(i)];
    const std::string_view piece = text.substr(s.begin, s.len);
    const int32_t id = v_.find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const int32_t b = byte_token_[static_cast<uint8_t>(c)];
      if (b >= 0) out.push_back(b);
    }
  }
}

}  // namespace ferrite::tokenizer
