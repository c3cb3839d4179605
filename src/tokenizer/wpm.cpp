// BERT WordPiece, as llama.cpp tokenizes it. Normalization per codepoint:
// whitespace ends a word, NUL/U+FFFD/control characters are dropped, each
// codepoint becomes the first codepoint of its NFD decomposition (so a
// precomposed accented letter loses its accent), letters are lowercased, and
// punctuation, ASCII symbols and CJK ideographs become words of their own.
// Combining marks that stand alone in the input (decomposed accents, the vowel
// signs and viramas of Indic scripts) are kept: llama.cpp keeps them, so a
// word holding one that the vocabulary cannot cover becomes UNK, where
// Hugging Face's BertTokenizer (which deletes category Mn after NFD) would
// still split it. Each word, prefixed with U+2581, is then covered greedily by
// the longest vocabulary tokens; a word that cannot be covered becomes UNK.
#include <algorithm>

#include "tokenizer/encoders.h"
#include "tokenizer/unicode.h"

namespace ferrite::tokenizer {
namespace {

bool is_cjk(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Decodes with the lenient rules of the reference: an invalid sequence
// consumes one byte and yields U+FFFD (which normalization then drops).
uint32_t next_cpt(std::string_view s, size_t& i) {
  uint32_t cpt = 0;
  const size_t len = decode_utf8_strict(s, i, cpt);
  if (len == 0) {
    ++i;
    return kReplacementChar;
  }
  i += len;
  return cpt;
}

}  // namespace

void WpmEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  // Normalized words, each stored as "▁" + word.
  std::vector<std::string> words;
  std::string cur(kEscapedSpace);
  const size_t prefix = kEscapedSpace.size();
  auto finish = [&] {
    if (cur.size() > prefix) {
      words.push_back(cur);
      cur.resize(prefix);
    }
  };
  for (size_t i = 0; i < text.size();) {
    const uint32_t raw = next_cpt(text, i);
    const uint32_t cpt = nfd_first(raw);
    const CodepointFlags f = codepoint_flags(cpt);
    if (f.whitespace) {
      finish();
      continue;
    }
    if (cpt == 0 || cpt == kReplacementChar || f.control) continue;
    const uint32_t low = to_lower(cpt);
    if (f.punctuation || (cpt < 0x7F && f.symbol) || is_cjk(cpt)) {
      finish();
      append_utf8(cur, low);
      finish();
    } else {
      append_utf8(cur, low);
    }
  }
  finish();

  const size_t max_len = v_.max_token_len;
  for (const std::string& w : words) {
    const size_t n = w.size();
    const size_t start = out.size();
    bool ok = true;
    for (size_t i = 0; i < n;) {
      bool match = false;
      for (size_t j = std::min(n, i + max_len + 1); j > i; --j) {
        const int32_t id = v_.find(std::string_view(w).substr(i, j - i));
        if (id >= 0) {
          out.push_back(id);
          match = true;
          i = j;
          break;
        }
      }
      if (!match) {
        ok = false;
        break;
      }
    }
    if (!ok) out.resize(start);
    if (out.size() == start) out.push_back(v_.unk);
  }
}

}  // namespace ferrite::tokenizer
