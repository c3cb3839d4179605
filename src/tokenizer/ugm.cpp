// Unigram (T5 / SentencePiece unigram). The text is normalized with the
// model's precompiled character map (a double-array trie, XOR-compressed,
// of input prefixes to replacement strings), spaces become U+2581 (with the
// space-prefix and whitespace-merging options), then a Viterbi pass over
// code points picks the segmentation with the highest total score; a code
// point no token covers costs the lowest score minus a penalty and becomes UNK
// (consecutive UNKs collapse).
#include <algorithm>
#include <cfloat>
#include <cstring>
#include <map>

#include "core/error.h"
#include "tokenizer/encoders.h"
#include "tokenizer/unicode.h"

namespace ferrite::tokenizer {
// Named, not anonymous: UgmEncoder::Impl (external linkage) holds a Trie, and
// gcc warns (-Wsubobject-linkage) when this file is part of a unity source.
namespace ugm_detail {

constexpr double kUnknownPenalty = 10.0;

// A byte trie over token texts.
struct Trie {
  struct Node {
    std::map<uint8_t, uint32_t> next;
    int32_t value = kNoToken;
  };
  std::vector<Node> nodes{1};
  void insert(std::string_view s, int32_t value) {
    uint32_t n = 0;
    for (char c : s) {
      const auto b = static_cast<uint8_t>(c);
      auto it = nodes[n].next.find(b);
      if (it == nodes[n].next.end()) {
        nodes.emplace_back();
        const auto idx = static_cast<uint32_t>(nodes.size() - 1);
        nodes[n].next.emplace(b, idx);
        n = idx;
      } else {
        n = it->second;
      }
    }
    nodes[n].value = value;
  }
  // Child of node n by byte b, or 0 when none (the root is never a child).
  uint32_t child(uint32_t n, uint8_t b) const {
    auto it = nodes[n].next.find(b);
    return it == nodes[n].next.end() ? 0 : it->second;
  }
};

}  // namespace ugm_detail

struct UgmEncoder::Impl {
  const Vocab& v;
  ugm_detail::Trie tokens;
  ugm_detail::Trie user_defined;
  double unknown_score = 0.0;
  const uint32_t* xcda = nullptr;
  size_t xcda_size = 0;
  const char* replacements = nullptr;
  size_t replacements_size = 0;
  std::vector<uint32_t> xcda_storage;

  explicit Impl(const Vocab& vocab) : v(vocab) {
    const auto& cm = v.precompiled_charsmap;
    if (!cm.empty()) {
      if (cm.size() < 4) throw ModelError("precompiled_charsmap is too small");
      uint32_t blob = 0;
      std::memcpy(&blob, cm.data(), 4);
      if (static_cast<uint64_t>(blob) + 4 > cm.size()) throw ModelError("precompiled_charsmap: bad trie size");
      xcda_storage.resize(blob / 4);
      std::memcpy(xcda_storage.data(), cm.data() + 4, xcda_storage.size() * 4);
      xcda = xcda_storage.data();
      xcda_size = xcda_storage.size();
      replacements = reinterpret_cast<const char*>(cm.data() + 4 + blob);
      replacements_size = cm.size() - 4 - blob;
    }
    float min_score = FLT_MAX;
    for (int32_t id = 0; id < v.n_vocab(); ++id) {
      const uint32_t a = v.attr[static_cast<size_t>(id)];
      if (a & kAttrNormal) min_score = std::min(min_score, v.score[static_cast<size_t>(id)]);
      if (a & (kAttrNormal | kAttrUserDefined | kAttrUnused)) tokens.insert(v.text[static_cast<size_t>(id)], id);
      if (a & kAttrUserDefined) user_defined.insert(v.text[static_cast<size_t>(id)], id);
    }
    unknown_score = static_cast<double>(min_score) - ugm_detail::kUnknownPenalty;
  }

  uint32_t node(size_t i) const {
    if (i >= xcda_size) throw FormatError("precompiled_charsmap", i, "trie", "index out of range");
    return xcda[i];
  }
  static uint32_t base(uint32_t p) { return (p >> 10) << ((p & (1u << 9)) >> 6); }
  static uint32_t lcheck(uint32_t p) { return p & ((1u << 31) | 0xFF); }
  static bool leaf(uint32_t p) { return (p >> 8) & 1; }
  static uint32_t value(uint32_t p) { return p & ((1u << 31) - 1); }

  // Normalization of the prefix at `off`: replacement text and bytes consumed.
  std::pair<std::string_view, size_t> normalize_prefix(std::string_view in, size_t off) const {
    // A user-defined token is kept as is (longest match).
    size_t ud_len = 0;
    for (uint32_t n = 0, i = off; i < in.size();) {
      n = user_defined.child(n, static_cast<uint8_t>(in[i]));
      if (n == 0) break;
      ++i;
      if (user_defined.nodes[n].value != kNoToken || !user_defined.nodes[n].next.empty()) ud_len = i - off;
    }
    if (ud_len > 0) return {in.substr(off, ud_len), ud_len};
    size_t best_len = 0, best_off = 0;
    if (xcda_size > 0) {
      uint32_t idx = base(node(0));
      for (size_t i = off; i < in.size(); ++i) {
        const auto c = static_cast<uint8_t>(in[i]);
        if (c == 0) break;
        idx ^= c;
        const uint32_t p = node(idx);
        if (lcheck(p) != c) break;
        const bool is_leaf = leaf(p);
        idx ^= base(p);
        if (is_leaf) {
          best_len = i - off + 1;
          best_off = value(node(idx));
        }
      }
    }
    if (best_len > 0) {
      if (best_off >= replacements_size) throw FormatError("precompiled_charsmap", best_off, "replacement", "out of range");
      const char* r = replacements + best_off;
      const size_t max = replacements_size - best_off;
      const size_t len = strnlen(r, max);
      if (len == max) throw FormatError("precompiled_charsmap", best_off, "replacement", "unterminated");
      return {std::string_view(r, len), best_len};
    }
    uint32_t cpt = 0;
    const size_t len = decode_utf8_strict(in, off, cpt);
    if (len == 0) return {"\xEF\xBF\xBD", 1};
    return {in.substr(off, len), len};
  }

  std::string normalize(std::string_view in) const {
    std::string out;
    out.reserve(in.size() * 3);
    const std::string_view space = v.escape_whitespaces ? kEscapedSpace : std::string_view(" ");
    const bool prepend = !v.treat_whitespace_as_suffix && v.add_space_prefix;
    const bool append = v.treat_whitespace_as_suffix && v.add_space_prefix;
    const bool merge = v.remove_extra_whitespaces;
    bool prepended = false;
    bool in_word = false;
    for (size_t off = 0; off < in.size();) {
      const auto [rep, used] = normalize_prefix(in, off);
      for (char c : rep) {
        if (c != ' ') {
          if (!in_word) {
            in_word = true;
            if ((prepend && !prepended) || merge) {
              out.append(space);
              prepended = true;
            }
          }
          out.push_back(c);
        } else {
          in_word = false;
          if (!merge) out.append(space);
        }
      }
      off += used;
    }
    if (append) out.append(space);
    return out;
  }
};

UgmEncoder::UgmEncoder(const Vocab& v) : impl_(std::make_unique<Impl>(v)) {}
UgmEncoder::~UgmEncoder() = default;

void UgmEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  const Impl& m = *impl_;
  const std::string norm = m.normalize(text);
  const size_t n = norm.size();
  if (n == 0) return;
  struct Best {
    int32_t id;
    size_t from;
    double score;
  };
  std::vector<Best> best(n + 1, Best{m.v.unk, 0, -DBL_MAX});
  best[0] = Best{m.v.unk, 0, 0.0};
  for (size_t off = 0; off < n;) {
    const size_t cp_len = std::min(utf8_seq_len(static_cast<uint8_t>(norm[off])), n - off);
    const double here = best[off].score;
    bool single_found = false;
    uint32_t node = 0;
    for (size_t i = off; i < n; ++i) {
      node = m.tokens.child(node, static_cast<uint8_t>(norm[i]));
      if (node == 0) break;
      const int32_t id = m.tokens.nodes[node].value;
      if (id == kNoToken) continue;
      const size_t end = i + 1;
      if (end - off == cp_len) single_found = true;
      const double s = here + ((m.v.attr[static_cast<size_t>(id)] & kAttrUserDefined)
                                   ? 0.0
                                   : static_cast<double>(m.v.score[static_cast<size_t>(id)]));
      if (s > best[end].score) best[end] = Best{id, off, s};
    }
    if (!single_found) {
      const double s = here + m.unknown_score;
      if (s > best[off + cp_len].score) best[off + cp_len] = Best{m.v.unk, off, s};
    }
    off += cp_len;
  }
  const size_t start = out.size();
  bool prev_unk = false;
  for (size_t pos = n;;) {
    const Best& b = best[pos];
    const bool is_unk = b.id == m.v.unk;
    if (!(prev_unk && is_unk)) out.push_back(b.id);
    if (b.from == 0) break;
    prev_unk = is_unk;
    pos = b.from;
  }
  std::reverse(out.begin() + static_cast<ptrdiff_t>(start), out.end());
}

}  // namespace ferrite::tokenizer
