#include "tokenizer/stream_decoder.h"

#include "tokenizer/unicode.h"

namespace ferrite::tokenizer {

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool special) : tok_(tok), special_(special) {}

void StreamDecoder::reset() {
  pending_.clear();
  at_start_ = true;
}

void StreamDecoder::follow(std::span<const int32_t> prompt) {
  at_start_ = true;
  for (int32_t id : prompt) {
    if (!tok_.piece_view(id, special_).empty()) {
      at_start_ = false;
      return;
    }
  }
}

std::string StreamDecoder::push(int32_t id) {
  std::string_view piece = tok_.piece_view(id, special_);
  if (at_start_ && !piece.empty()) {
    if (tok_.strips_leading_space() && piece.front() == ' ') piece.remove_prefix(1);
    at_start_ = false;
  }
  pending_.append(piece);
  std::string out;
  drain(out, false);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out;
  drain(out, true);
  at_start_ = true;
  return out;
}

void StreamDecoder::drain(std::string& out, bool final) {
  size_t i = 0;
  while (i < pending_.size()) {
    uint32_t cpt = 0;
    const size_t len = decode_utf8_strict(pending_, i, cpt);
    if (len > 0) {
      out.append(pending_, i, len);
      i += len;
      continue;
    }
    // Invalid here: either the start of a sequence that later bytes may
    // complete, or garbage. A sequence is only incomplete if every byte
    // present is a valid prefix.
    const auto lead = static_cast<uint8_t>(pending_[i]);
    const size_t need = utf8_seq_len(lead);
    const size_t have = pending_.size() - i;
    bool prefix_ok = lead >= 0xC2 && lead <= 0xF4 && have < need;
    for (size_t k = 1; prefix_ok && k < have; ++k) {
      const auto c = static_cast<uint8_t>(pending_[i + k]);
      if ((c & 0xC0) != 0x80) prefix_ok = false;
      // Second-byte limits that rule out overlongs, surrogates, > U+10FFFF.
      if (k == 1 && ((lead == 0xE0 && c < 0xA0) || (lead == 0xED && c > 0x9F) || (lead == 0xF0 && c < 0x90) ||
                     (lead == 0xF4 && c > 0x8F))) {
        prefix_ok = false;
      }
    }
    if (prefix_ok && !final) break;  // wait for the rest
    append_utf8(out, kReplacementChar);
    i += 1;
  }
  pending_.erase(0, i);
}

}  // namespace ferrite::tokenizer
