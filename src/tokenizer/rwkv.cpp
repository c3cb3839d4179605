// The RWKV "world" tokenizer (tokenizer.ggml.model = "rwkv"): every token is
// a byte string whose text in the GGUF is escaped the way Python prints
// bytes (llama.cpp's converter writes repr(bytes)[2:-1]): "\t", "\n", "\r",
// "\xHH" (two hex digits, read as llama.cpp reads them: a character from
// 'a' on counts as c - 'a' + 10, any other as c - '0'), and a backslash
// before any other character stands for that character. Encoding is greedy:
// at each position the longest token matching the bytes there, found by
// walking a trie of the tokens' bytes.
#include <algorithm>
#include <string>
#include <utility>

#include "core/error.h"
#include "tokenizer/encoders.h"

namespace ferrite::tokenizer {

std::string rwkv_unescape(std::string_view escaped) {
  std::string out;
  out.reserve(escaped.size());
  bool escaping = false;
  int hex_left = 0;
  uint8_t acc = 0;
  for (const char ch : escaped) {
    const auto c = static_cast<uint8_t>(ch);
    if (hex_left > 0) {
      const auto digit = static_cast<uint8_t>(c >= 'a' ? c - 'a' + 10 : c - '0');
      acc = static_cast<uint8_t>((acc << 4) + digit);
      if (--hex_left == 0) {
        out.push_back(static_cast<char>(acc));
        acc = 0;
      }
    } else if (escaping) {
      escaping = false;
      switch (c) {
        case 't': out.push_back('\t'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 'x': hex_left = 2; break;
        default: out.push_back(ch);
      }
    } else if (c == '\\') {
      escaping = true;
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

int32_t RwkvEncoder::child(int32_t node, uint8_t c) const {
  const auto& kids = nodes_[static_cast<size_t>(node)].next;
  const auto it = std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, int32_t{-1}));
  return it != kids.end() && it->first == c ? it->second : -1;
}

RwkvEncoder::RwkvEncoder(const Vocab& v) : v_(v) {
  nodes_.emplace_back();
  for (int32_t id = 0; id < v.n_vocab(); ++id) {
    const std::string bytes = rwkv_unescape(v.text[static_cast<size_t>(id)]);
    if (bytes.empty()) continue;
    int32_t node = 0;
    for (const char ch : bytes) {
      const auto c = static_cast<uint8_t>(ch);
      const int32_t next = child(node, c);
      if (next >= 0) {
        node = next;
      } else {
        const auto fresh = static_cast<int32_t>(nodes_.size());
        auto& kids = nodes_[static_cast<size_t>(node)].next;
        kids.insert(std::lower_bound(kids.begin(), kids.end(), std::make_pair(c, int32_t{-1})), {c, fresh});
        nodes_.emplace_back();
        node = fresh;
      }
    }
    nodes_[static_cast<size_t>(node)].id = id;  // a later duplicate wins, as in llama.cpp's trie
  }
}

void RwkvEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  size_t pos = 0;
  while (pos < text.size()) {
    int32_t node = 0, best = kNoToken;
    size_t best_end = pos;
    for (size_t i = pos; i < text.size(); ++i) {
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node < 0) break;
      if (nodes_[static_cast<size_t>(node)].id != kNoToken) {
        best = nodes_[static_cast<size_t>(node)].id;
        best_end = i + 1;
      }
    }
    if (best == kNoToken) {
      // No token matches here: the unknown token, as llama.cpp (whose RWKV vocabularies have none by default).
      if (v_.unk == kNoToken) {
        throw InvalidArgument("byte " + std::to_string(static_cast<uint8_t>(text[pos])) + " at offset " +
                              std::to_string(pos) + " has no token in this RWKV vocabulary (and it has no unknown token)");
      }
      out.push_back(v_.unk);
      ++pos;
      continue;
    }
    out.push_back(best);
    pos = best_end;
  }
}

}  // namespace ferrite::tokenizer
