#include "tokenizer/tokenizer.h"

#include <optional>

#include "core/error.h"
#include "tokenizer/encoders.h"
#include "tokenizer/special_split.h"
#include "tokenizer/unicode.h"

namespace ferrite::tokenizer {

struct Tokenizer::Impl {
  Vocab v;
  std::optional<SpmEncoder> spm;
  std::optional<BpeEncoder> bpe;
  std::optional<WpmEncoder> wpm;
  std::optional<UgmEncoder> ugm;
  std::optional<RwkvEncoder> rwkv;
  std::vector<std::string> pieces;  // [n_vocab] piece with special tokens rendered

  explicit Impl(Vocab vocab) : v(std::move(vocab)) {
    v.text_to_id.rebind(&v.text);
    switch (v.kind) {
      case ModelKind::SPM: spm.emplace(v); break;
      case ModelKind::BPE: bpe.emplace(v); break;
      case ModelKind::WPM: wpm.emplace(v); break;
      case ModelKind::UGM: ugm.emplace(v); break;
      case ModelKind::RWKV: rwkv.emplace(v); break;
    }
    pieces.resize(v.text.size());
    for (size_t id = 0; id < v.text.size(); ++id) pieces[id] = make_piece(static_cast<int32_t>(id));
  }

  std::string make_piece(int32_t id) const {
    const std::string& t = v.text[static_cast<size_t>(id)];
    const uint32_t a = v.attr[static_cast<size_t>(id)];
    if (a & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return t;
    if (v.kind == ModelKind::RWKV) return rwkv_unescape(t);
    if (a & kAttrByte) {
      // "<0xXX>"
      const auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
      };
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && hex(t[3]) >= 0 && hex(t[4]) >= 0) {
        return std::string(1, static_cast<char>(hex(t[3]) * 16 + hex(t[4])));
      }
      return "";
    }
    if (!(a & kAttrNormal)) return "";
    if (v.kind == ModelKind::BPE) {
      const ByteEncoder& enc = ByteEncoder::get();
      std::string out;
      for (size_t i = 0; i < t.size();) {
        uint32_t cpt = 0;
        const size_t len = decode_utf8_strict(t, i, cpt);
        const int b = len ? enc.decode(cpt) : -1;
        if (b >= 0) {
          out.push_back(static_cast<char>(b));
        } else {
          out.append(t, i, len ? len : 1);  // not byte-encoded: kept as is
        }
        i += len ? len : 1;
      }
      return out;
    }
    // SentencePiece-style vocabularies spell spaces as U+2581.
    std::string out;
    for (size_t i = 0; i < t.size();) {
      if (t.compare(i, kEscapedSpace.size(), kEscapedSpace) == 0) {
        out.push_back(' ');
        i += kEscapedSpace.size();
      } else {
        out.push_back(t[i++]);
      }
    }
    return out;
  }

  void encode_text(std::string_view text, bool& prev_special, std::string& buf, std::vector<int32_t>& out) const {
    switch (v.kind) {
      case ModelKind::SPM: {
        buf.clear();
        if (v.add_space_prefix && prev_special) buf.append(kEscapedSpace);
        for (char c : text) {
          if (c == ' ') {
            buf.append(kEscapedSpace);
          } else {
            buf.push_back(c);
          }
        }
        spm->encode(buf, out);
        break;
      }
      case ModelKind::BPE:
        if (is_valid_utf8(text)) {
          bpe->encode(text, out);
        } else {
          bpe->encode(sanitize_utf8(text), out);
        }
        break;
      case ModelKind::WPM: wpm->encode(text, out); break;
      case ModelKind::UGM: ugm->encode(text, out); break;
      case ModelKind::RWKV: rwkv->encode(text, out); break;
    }
    prev_special = false;
  }
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_gguf(const gguf::File& file) {
  return Tokenizer(std::make_unique<Impl>(Vocab::from_gguf(file)));
}

Tokenizer Tokenizer::from_file(const std::string& path) { return from_gguf(gguf::File::open(path)); }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  encode(text, add_special, parse_special, out);
  return out;
}

void Tokenizer::encode(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t>& out) const {
  encode(text, add_special, parse_special, out, {});
}

void Tokenizer::encode(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t>& out,
                       std::span<const TextRange> literal) const {
  const Impl& m = *impl_;
  const Vocab& v = m.v;
  if (text.size() > UINT32_MAX) throw InvalidArgument("text too long to tokenize (over 4 GiB)");
  std::vector<Fragment> frags;
  split_special(v, text, parse_special, frags, literal);

  const bool bos_first = add_special && (v.kind == ModelKind::WPM ? v.bos != kNoToken : v.add_bos);
  if (bos_first) {
    if (v.bos == kNoToken) throw ModelError("the vocabulary asks for a BOS token but has none");
    out.push_back(v.bos);
  }
  bool prev_special = true;  // an SPM text run at the start gets the space prefix
  std::string buf;
  for (const Fragment& f : frags) {
    if (f.token != kNoToken) {
      out.push_back(f.token);
      prev_special = true;
    } else {
      m.encode_text(text.substr(f.begin, f.end - f.begin), prev_special, buf, out);
    }
  }
  if (add_special) {
    if (v.kind == ModelKind::WPM) {
      if (v.sep != kNoToken) out.push_back(v.sep);
    } else if (v.add_eos) {
      out.push_back(v.eos);
    }
  }
}

std::string_view Tokenizer::piece_view(int32_t id, bool special) const {
  const Vocab& v = impl_->v;
  if (!v.valid(id)) throw InvalidArgument("token id " + std::to_string(id) + " out of range [0, " +
                                          std::to_string(v.n_vocab()) + ")");
  if (!special && (v.attr[static_cast<size_t>(id)] & (kAttrUnknown | kAttrControl))) return {};
  return impl_->pieces[static_cast<size_t>(id)];
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const { return std::string(piece_view(id, special)); }

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool special) const {
  std::string out;
  bool strip = strips_leading_space();
  for (int32_t id : ids) {
    std::string_view p = piece_view(id, special);
    if (strip && !p.empty()) {
      if (p.front() == ' ') p.remove_prefix(1);
      strip = false;
    }
    out.append(p);
  }
  return out;
}

int32_t Tokenizer::n_vocab() const { return impl_->v.n_vocab(); }
int32_t Tokenizer::bos() const { return impl_->v.bos; }
int32_t Tokenizer::eos() const { return impl_->v.eos; }
int32_t Tokenizer::eot() const { return impl_->v.eot; }
int32_t Tokenizer::unk() const { return impl_->v.unk; }
bool Tokenizer::add_bos() const { return impl_->v.add_bos; }
bool Tokenizer::add_eos() const { return impl_->v.add_eos; }
bool Tokenizer::is_eog(int32_t id) const { return impl_->v.eog.count(id) > 0; }
bool Tokenizer::is_control(int32_t id) const {
  return impl_->v.valid(id) && (impl_->v.attr[static_cast<size_t>(id)] & kAttrControl);
}
bool Tokenizer::strips_leading_space() const {
  return impl_->v.add_space_prefix && (impl_->v.kind == ModelKind::SPM || impl_->v.kind == ModelKind::UGM);
}
const Vocab& Tokenizer::vocab() const { return impl_->v; }

}  // namespace ferrite::tokenizer
