#include "runtime/prompt_text.h"

#include <algorithm>

namespace ferrite::runtime {
namespace {

using Json = nlohmann::ordered_json;
using tokenizer::TextRange;

// Markers are private-use characters U+E000..U+E01F, three UTF-8 bytes each:
// U+E000 opens, U+E010..U+E019 are the digits of the index, U+E001 closes.
// Such characters in the input are themselves hidden behind markers.
constexpr unsigned char kLead0 = 0xEE;
constexpr unsigned char kLead1 = 0x80;
constexpr unsigned char kOpen = 0x80;
constexpr unsigned char kClose = 0x81;
constexpr unsigned char kDigit0 = 0x90;
constexpr unsigned char kLastReserved = 0x9F;

bool is_reserved_at(std::string_view s, size_t i) {
  return i + 2 < s.size() && static_cast<unsigned char>(s[i]) == kLead0 &&
         static_cast<unsigned char>(s[i + 1]) == kLead1 && static_cast<unsigned char>(s[i + 2]) >= kOpen &&
         static_cast<unsigned char>(s[i + 2]) <= kLastReserved;
}

void put_char(std::string& out, unsigned char last) {
  out += static_cast<char>(kLead0);
  out += static_cast<char>(kLead1);
  out += static_cast<char>(last);
}

std::string marker(size_t index) {
  std::string out;
  put_char(out, kOpen);
  const std::string digits = std::to_string(index);
  for (char d : digits) put_char(out, static_cast<unsigned char>(kDigit0 + (d - '0')));
  put_char(out, kClose);
  return out;
}

void add_range(std::vector<TextRange>& out, size_t begin, size_t end) {
  if (begin < end) out.push_back({begin, end});
}

}  // namespace

bool PromptText::touches_literal(size_t begin, size_t end) const {
  auto it = std::upper_bound(literal.begin(), literal.end(), begin,
                             [](size_t at, const TextRange& r) { return at < r.end; });
  return it != literal.end() && it->begin < end;
}

SpecialTextGuard::SpecialTextGuard(const tokenizer::Vocab& vocab)
    : SpecialTextGuard([&vocab] {
        std::vector<std::string> texts;
        for (int32_t id : vocab.special_tokens) {
          const uint32_t attr = vocab.attr[static_cast<size_t>(id)];
          if ((attr & (tokenizer::kAttrControl | tokenizer::kAttrUnknown)) && !vocab.text[static_cast<size_t>(id)].empty()) {
            texts.push_back(vocab.text[static_cast<size_t>(id)]);
          }
        }
        return texts;
      }()) {}

SpecialTextGuard::SpecialTextGuard(std::vector<std::string> texts) : texts_(std::move(texts)) {
  forward_.emplace_back();
  backward_.emplace_back();
  for (const std::string& t : texts_) {
    if (t.empty()) continue;
    insert(forward_, t);
    insert(backward_, std::string(t.rbegin(), t.rend()));
    max_len_ = std::max(max_len_, t.size());
    first_byte_[static_cast<uint8_t>(t.front())] = true;
    last_byte_[static_cast<uint8_t>(t.back())] = true;
  }
}

int32_t SpecialTextGuard::child(const std::vector<Node>& trie, int32_t node, uint8_t c) {
  for (const auto& [b, n] : trie[static_cast<size_t>(node)].next) {
    if (b == c) return n;
  }
  return -1;
}

void SpecialTextGuard::insert(std::vector<Node>& trie, std::string_view s) {
  int32_t node = 0;
  for (char ch : s) {
    const uint8_t c = static_cast<uint8_t>(ch);
    int32_t n = child(trie, node, c);
    if (n < 0) {
      n = static_cast<int32_t>(trie.size());
      trie[static_cast<size_t>(node)].next.emplace_back(c, n);
      trie.emplace_back();
    }
    node = n;
  }
  trie[static_cast<size_t>(node)].terminal = true;
}

std::vector<TextRange> SpecialTextGuard::ranges(std::string_view s) const {
  std::vector<TextRange> out;
  const size_t n = s.size();
  for (size_t i = 0; i < n; ++i) {
    if (is_reserved_at(s, i)) {
      add_range(out, i, i + 3);
      continue;
    }
    if (!first_byte_[static_cast<uint8_t>(s[i])]) continue;
    // The longest control-token text starting here, or (at the end of the
    // string) the start of one cut by the edge.
    int32_t node = 0;
    size_t longest = 0;
    size_t j = i;
    for (; j < n; ++j) {
      node = child(forward_, node, static_cast<uint8_t>(s[j]));
      if (node < 0) break;
      if (forward_[static_cast<size_t>(node)].terminal) longest = j + 1 - i;
    }
    if (j == n && node > 0) longest = n - i;  // a prefix of a text runs into the edge
    add_range(out, i, i + longest);
  }
  // The end of a text cut by the string's start.
  const size_t head = std::min(n, max_len_);
  for (size_t k = head; k > 0; --k) {
    if (!last_byte_[static_cast<uint8_t>(s[k - 1])]) continue;
    int32_t node = 0;
    size_t j = k;
    while (j > 0) {
      node = child(backward_, node, static_cast<uint8_t>(s[j - 1]));
      if (node < 0) break;
      --j;
    }
    if (j == 0 && node > 0) {
      add_range(out, 0, k);
      break;
    }
  }
  // A short string lying inside a text ("im_st" of "<|im_start|>").
  if (n > 0 && n < max_len_) {
    for (const std::string& t : texts_) {
      if (t.size() > n && t.find(s) != std::string::npos) {
        add_range(out, 0, n);
        break;
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const TextRange& a, const TextRange& b) { return a.begin < b.begin; });
  std::vector<TextRange> merged;
  for (const TextRange& r : out) {
    if (!merged.empty() && r.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, r.end);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::string SpecialTextGuard::Session::protect_text(std::string_view s) {
  const std::vector<TextRange> hide = g_.ranges(s);
  if (hide.empty()) return std::string(s);
  std::string out;
  out.reserve(s.size() + hide.size() * 12);
  size_t at = 0;
  for (const TextRange& r : hide) {
    out.append(s.substr(at, r.begin - at));
    out += marker(originals_.size());
    originals_.emplace_back(s.substr(r.begin, r.end - r.begin));
    at = r.end;
  }
  out.append(s.substr(at));
  return out;
}

Json SpecialTextGuard::Session::protect(const Json& value) {
  if (value.is_string()) return protect_text(value.get_ref<const std::string&>());
  if (value.is_array()) {
    Json out = Json::array();
    for (const Json& x : value) out.push_back(protect(x));
    return out;
  }
  if (value.is_object()) {
    Json out = Json::object();
    for (auto it = value.begin(); it != value.end(); ++it) out[protect_text(it.key())] = protect(*it);
    return out;
  }
  return value;
}

PromptText SpecialTextGuard::Session::restore(std::string_view rendered) const {
  PromptText p;
  p.text.reserve(rendered.size());
  size_t i = 0;
  while (i < rendered.size()) {
    if (!is_reserved_at(rendered, i)) {
      p.text += rendered[i++];
      continue;
    }
    // A whole marker: open, digits, close.
    size_t j = i;
    size_t index = 0;
    bool whole = static_cast<unsigned char>(rendered[i + 2]) == kOpen;
    bool closed = false;
    size_t digits = 0;
    if (whole) {
      j = i + 3;
      while (is_reserved_at(rendered, j)) {
        const unsigned char c = static_cast<unsigned char>(rendered[j + 2]);
        if (c == kClose) {
          closed = true;
          j += 3;
          break;
        }
        if (c < kDigit0 || c > kDigit0 + 9 || digits >= 18) break;
        index = index * 10 + (c - kDigit0);
        ++digits;
        j += 3;
      }
    }
    if (whole && closed && digits > 0 && index < originals_.size()) {
      const std::string& original = originals_[index];
      const size_t begin = p.text.size();
      p.text += original;
      if (!p.literal.empty() && p.literal.back().end == begin) {
        p.literal.back().end = p.text.size();
      } else {
        p.literal.push_back({begin, p.text.size()});
      }
      i = j;
    } else {
      i += 3;  // a piece of a marker the template cut: dropped
    }
  }
  return p;
}

}  // namespace ferrite::runtime
