#include "tokenizer/special_split.h"

#include <algorithm>
#include <array>

#include "tokenizer/tokenizer.h"

namespace ferrite::tokenizer {
namespace {

bool c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Whether [begin, end) overlaps a range of `sorted`.
bool overlaps(std::span<const TextRange> sorted, size_t begin, size_t end) {
  auto it = std::upper_bound(sorted.begin(), sorted.end(), begin,
                             [](size_t at, const TextRange& r) { return at < r.end; });
  return it != sorted.end() && it->begin < end;
}

}  // namespace

void split_special(const Vocab& v, std::string_view text, bool parse_special, std::vector<Fragment>& out,
                   std::span<const TextRange> literal) {
  out.clear();
  if (text.empty()) return;
  out.push_back(Fragment{kNoToken, 0, static_cast<uint32_t>(text.size())});
  if (v.special_tokens.empty()) return;

  // Bytes present in the text: a token whose first byte is absent cannot match.
  std::array<bool, 256> present{};
  for (char c : text) present[static_cast<uint8_t>(c)] = true;

  std::vector<Fragment> next;
  for (const int32_t id : v.special_tokens) {
    const uint32_t attr = v.attr[static_cast<size_t>(id)];
    if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
    const std::string& tok = v.text[static_cast<size_t>(id)];
    if (!present[static_cast<uint8_t>(tok[0])] || text.find(tok) == std::string_view::npos) continue;

    next.clear();
    for (const Fragment& f : out) {
      if (f.token != kNoToken) {
        next.push_back(f);
        continue;
      }
      uint32_t begin = f.begin;  // start of the text run not yet emitted
      uint32_t from = f.begin;   // where the search goes on
      const uint32_t end = f.end;
      const bool guarded = !literal.empty() && (attr & (kAttrControl | kAttrUnknown));
      while (from < end) {
        const size_t m = text.substr(0, end).find(tok, from);
        if (m == std::string_view::npos) break;
        if (guarded && overlaps(literal, m, m + tok.size())) {
          from = static_cast<uint32_t>(m + 1);
          continue;
        }
        uint32_t left_end = static_cast<uint32_t>(m);
        if (attr & kAttrLstrip) {
          while (left_end > begin && c_space(text[left_end - 1])) --left_end;
        }
        if (left_end > begin) next.push_back(Fragment{kNoToken, begin, left_end});
        next.push_back(Fragment{id, 0, 0});
        begin = static_cast<uint32_t>(m + tok.size());
        if (attr & kAttrRstrip) {
          while (begin < end && c_space(text[begin])) ++begin;
        }
        from = begin;
      }
      if (begin < end) next.push_back(Fragment{kNoToken, begin, end});
    }
    out.swap(next);
  }
}

}  // namespace ferrite::tokenizer
